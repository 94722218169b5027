package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// maxSQLFileBytes bounds what is read; what reaches the C parser is also bounded in
// structure (pgtree.Bounds, the driver's own bounds), since a pathological file can
// exhaust the parser's stack and kill the process.
const maxSQLFileBytes = 64 << 20

// sqlToken is a lexical token of a file, comments included.
type sqlToken struct {
	start, end int
	tok        pg.Token
}

func isComment(t pg.Token) bool { return t == pg.Token_SQL_COMMENT || t == pg.Token_C_COMMENT }

// checkSQLFile lints one SQL file, which runs outside the driver: every write to a
// protected table in it must be fenced by hand.
func checkSQLFile(path string, src []byte, pol *sqlfence.Policy, writers writerFuncs, res *result) {
	ln := newLines(src)
	fileErr := func(off int, msg string) {
		e := fileError{File: path, Message: msg}
		if off >= 0 {
			e.Line, e.Column = ln.pos(off)
		}
		res.Errors = append(res.Errors, e)
	}
	if len(src) > maxSQLFileBytes {
		fileErr(-1, fmt.Sprintf("file is %d bytes, more than the %d sqlfence check reads", len(src), maxSQLFileBytes))
		return
	}
	if !utf8.Valid(src) {
		fileErr(-1, "file is not valid UTF-8")
		return
	}
	text := string(src)
	scan, err := pgquery.Scan(text)
	if err != nil {
		fileErr(-1, "cannot read the SQL: "+err.Error())
		return
	}
	toks := make([]sqlToken, len(scan.Tokens))
	for i, t := range scan.Tokens {
		toks[i] = sqlToken{int(t.Start), int(t.End), t.Token}
	}
	if off, msg := pgtree.Bounds(scan.Tokens); msg != "" {
		fileErr(off, msg+"; sqlfence check does not parse it, because such input can crash the parser")
		return
	}
	tree, err := pgtree.ParseScanned(text, scan.Tokens, pgtree.Limit)
	var pe *pgquery.Error
	if err != nil && !errors.As(err, &pe) {
		fileErr(-1, err.Error())
		return
	}

	// Suppressions: each applies to the first token after it that is not a comment.
	var code []sqlToken // tokens without comments
	sups := map[int][]*suppression{}
	var all []*suppression
	var pending []*suppression
	for _, t := range toks {
		if isComment(t.tok) {
			if code, reason, ok := ParseIgnore(text[t.start:t.end]); ok {
				s := &suppression{file: path, code: code, reason: reason}
				s.line, s.col = ln.pos(t.start)
				s.endLine, s.endCol = ln.pos(t.end)
				pending = append(pending, s)
				all = append(all, s)
			}
			continue
		}
		if len(pending) > 0 {
			sups[t.start] = append(sups[t.start], pending...)
			pending = nil
		}
		code = append(code, t)
	}

	// A syntax error does not hide the rest of the file: its statements are parsed
	// one by one, and each that does not parse is an error of its own.
	if err != nil {
		var bad []badStatement
		tree = &pg.ParseResult{}
		tree.Stmts, bad = parseByStatement(text, code)
		for _, b := range bad {
			e := fileError{File: path, Message: b.msg, Statement: excerpt(text[b.start:b.end])}
			e.Line, e.Column = ln.pos(b.at)
			res.Errors = append(res.Errors, e)
		}
	}

	// A statement after SELECT sqlfence.override('<reason>') in the same transaction
	// runs under the guard's operator override: the reason is given and logged, so it
	// counts as a suppression (until COMMIT or ROLLBACK, or the end of the file).
	var override *suppression
	for _, raw := range tree.Stmts {
		if reason, ok := overrideCall(raw.Stmt); ok {
			override = &suppression{file: path, reason: "under sqlfence.override: " + reason, used: true}
			override.line, _ = ln.pos(int(raw.StmtLocation))
		} else if endsTransaction(raw.Stmt) {
			override = nil
		}
		loc := int(raw.StmtLocation)
		end := len(text)
		if raw.StmtLen > 0 {
			end = loc + int(raw.StmtLen)
		}
		// The statement's own tokens: from its first token that is not a comment to
		// its last one that is not a semicolon.
		lo, _ := slices.BinarySearchFunc(code, loc, func(t sqlToken, p int) int { return t.start - p })
		hi := lo
		for hi < len(code) && code[hi].start < end {
			hi++
		}
		for hi > lo && code[hi-1].tok == pg.Token_ASCII_59 {
			hi--
		}
		if lo >= hi || raw.Stmt == nil {
			continue
		}
		res.Statements++
		start, stop := code[lo].start, code[hi-1].end
		f, bad := lintStatement(pol, raw.Stmt, text[loc:end])
		if !bad {
			f, bad = writers.triggerFinding(raw.Stmt)
		}
		if !bad {
			continue
		}
		f.File = path
		f.Line, f.Column = ln.pos(start)
		f.EndLine, f.EndColumn = ln.pos(stop)
		f.Statement = excerpt(text[start:stop])
		var sup *suppression
		for _, s := range sups[start] {
			if !s.covers(f.Rule) {
				continue
			}
			s.used = true
			if sup == nil || sup.reason == "" {
				sup = s
			}
		}
		if override != nil && (sup == nil || sup.reason == "") {
			if sup != nil {
				sup.used = true
			}
			sup = override
		}
		report(res, f, sup)
	}
	settle(res, all)
}

// overrideCall recognises SELECT sqlfence.override('<reason>') and returns the
// reason, when it is one the function accepts.
func overrideCall(n *pg.Node) (string, bool) {
	sel := n.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || len(sel.FromClause) > 0 {
		return "", false
	}
	fc := sel.TargetList[0].GetResTarget().GetVal().GetFuncCall()
	if fc == nil || len(fc.Funcname) != 2 || len(fc.Args) != 1 ||
		fc.Funcname[0].GetString_().GetSval() != "sqlfence" || fc.Funcname[1].GetString_().GetSval() != "override" {
		return "", false
	}
	reason := strings.TrimSpace(fc.Args[0].GetAConst().GetSval().GetSval())
	return reason, utf8.RuneCountInString(reason) >= 8
}

func endsTransaction(n *pg.Node) bool {
	t := n.GetTransactionStmt()
	if t == nil {
		return false
	}
	switch t.Kind {
	case pg.TransactionStmtKind_TRANS_STMT_COMMIT, pg.TransactionStmtKind_TRANS_STMT_ROLLBACK,
		pg.TransactionStmtKind_TRANS_STMT_PREPARE, pg.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED,
		pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
		return true
	}
	return false
}
