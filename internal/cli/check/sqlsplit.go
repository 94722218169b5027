package check

import (
	"errors"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// maxJoin bounds how many ;-separated pieces parseByStatement joins into one
// statement: a routine body in BEGIN ATOMIC … END holds semicolons of its own.
const maxJoin = 64

// badStatement is a statement of a file that does not parse.
type badStatement struct {
	start, end int // byte offsets of its text
	at         int // byte offset of the parser's error
	msg        string
}

// parseByStatement parses a file the parser rejects as a whole, statement by
// statement, so that one statement with a syntax error does not hide the others: it
// returns the statements that parse, with their locations in the file, and those that
// do not. code is the file's tokens without comments.
func parseByStatement(text string, code []sqlToken) (stmts []*pg.RawStmt, bad []badStatement) {
	// The pieces: the code tokens between top-level semicolons, each with its own.
	type piece struct{ start, end int }
	var pieces []piece
	first := -1
	for _, t := range code {
		if first < 0 {
			first = t.start
		}
		if t.tok == pg.Token_ASCII_59 {
			pieces = append(pieces, piece{first, t.end})
			first = -1
		}
	}
	if first >= 0 {
		pieces = append(pieces, piece{first, code[len(code)-1].end})
	}
	for i := 0; i < len(pieces); {
		var firstErr error
		parsed := false
		for j := i; j < len(pieces) && j < i+maxJoin; j++ {
			start, end := pieces[i].start, pieces[j].end
			tree, err := pgtree.Parse(text[start:end], pgtree.Limit)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			for _, raw := range tree.Stmts {
				raw.StmtLocation += int32(start)
				if raw.StmtLen == 0 {
					raw.StmtLen = int32(end) - raw.StmtLocation
				}
				stmts = append(stmts, raw)
			}
			i, parsed = j+1, true
			break
		}
		if parsed {
			continue
		}
		b := badStatement{start: pieces[i].start, end: pieces[i].end, at: pieces[i].start, msg: firstErr.Error()}
		b.end = b.start + len(strings.TrimRight(text[b.start:b.end], "; \t\r\n"))
		var pe *pgquery.Error
		if errors.As(firstErr, &pe) {
			b.msg = pe.Message
			if pe.Cursorpos > 0 {
				b.at = pieces[i].start + runeOffset(text[pieces[i].start:pieces[i].end], pe.Cursorpos-1)
			}
		}
		bad = append(bad, b)
		i++
	}
	return stmts, bad
}
