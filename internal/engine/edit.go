// The token editor: positions from pg_query's scanner, insertions into the
// application's own text.

package engine

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// token is a lexical token of the statement, comments removed.
type token struct {
	start, end int
	tok        pg.Token
}

// edit is an insertion anchored to a token rather than a byte offset, so that the
// same edits apply to another text of the same shape (shape.go): text goes before
// token tok, after it, or in its place.
type edit struct {
	tok     int
	after   bool
	replace bool
	text    string
}

func (r *rewriter) tokenize(scanned []pgtree.Token) *Error {
	if _, msg := pgtree.BoundsTokens(scanned); msg != "" {
		return refuse(rulecode.TooDeep, nil, "the statement is "+msg,
			"split the statement, or pass long lists of values as an array parameter")
	}
	r.toks = make([]token, 0, len(scanned))
	for _, t := range scanned {
		if t.Kind == pg.Token_SQL_COMMENT || t.Kind == pg.Token_C_COMMENT {
			continue
		}
		r.toks = append(r.toks, token{int(t.Start), int(t.End), t.Kind})
	}
	r.depth = make([]int, len(r.toks))
	r.pair = make([]int, len(r.toks))
	var stack []int
	for i, t := range r.toks {
		r.depth[i] = len(stack)
		r.pair[i] = -1
		switch t.tok {
		case pg.Token_ASCII_40, pg.Token_ASCII_91, pg.Token_CASE:
			stack = append(stack, i)
		case pg.Token_ASCII_41, pg.Token_ASCII_93, pg.Token_END_P:
			if len(stack) > 0 {
				r.pair[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
				r.depth[i] = len(stack)
			}
		}
	}
	return nil
}

// span returns the token range of a statement at byte offset loc, length n (0: to the
// end), without a trailing semicolon.
func (r *rewriter) span(loc, n int) (lo, hi int) {
	end := len(r.sql)
	if n > 0 {
		end = loc + n
	}
	lo, _ = slices.BinarySearchFunc(r.toks, loc, func(t token, p int) int { return t.start - p })
	hi = lo
	for hi < len(r.toks) && r.toks[hi].start < end {
		hi++
	}
	for hi > lo && r.toks[hi-1].tok == pg.Token_ASCII_59 {
		hi--
	}
	return lo, hi
}

// find returns the first token in [from, hi) at depth base that satisfies match, or -1.
func (r *rewriter) find(from, hi, base int, match ...pg.Token) int {
	for i := max(from, 0); i < hi; i++ {
		if r.depth[i] == base && slices.Contains(match, r.toks[i].tok) {
			return i
		}
	}
	return -1
}

// clauseEnd returns the first token at depth base in [from, hi) that begins one of the
// given clauses, or hi. FROM after DISTINCT (IS DISTINCT FROM) and GROUP after WITHIN
// (WITHIN GROUP) belong to expressions, not clauses.
func (r *rewriter) clauseEnd(from, hi, base int, clauses ...pg.Token) int {
	for i := max(from, 0); i < hi; i++ {
		if r.depth[i] != base || !slices.Contains(clauses, r.toks[i].tok) {
			continue
		}
		if i > 0 {
			prev := r.toks[i-1].tok
			if r.toks[i].tok == pg.Token_FROM && prev == pg.Token_DISTINCT ||
				r.toks[i].tok == pg.Token_GROUP_P && prev == pg.Token_WITHIN {
				continue
			}
		}
		return i
	}
	return hi
}

func (r *rewriter) insertBefore(tok int, text string) {
	r.edits = append(r.edits, edit{tok: tok, text: text})
}

func (r *rewriter) insertAfter(tok int, text string) {
	r.edits = append(r.edits, edit{tok: tok, after: true, text: text})
}

// applyEdits inserts edits into sql, whose tokens are toks. The edits stay in the
// order they were made: with the positions of another text of the same shape, two
// edits may fall on one offset in one text and not in the other, and only sorting
// the original order gives each text what its own analysis gives. When starts is
// not nil, starts[i] is set to where edits[i].text begins in the result.
func applyEdits(sql string, toks []token, edits []edit, starts []int) string {
	type placed struct{ pos, end int }
	at := make([]placed, len(edits))
	order := make([]int, len(edits))
	grow := 0
	for i, e := range edits {
		t := toks[e.tok]
		switch {
		case e.replace:
			at[i] = placed{t.start, t.end}
		case e.after:
			at[i] = placed{t.end, t.end}
		default:
			at[i] = placed{t.start, t.start}
		}
		order[i] = i
		grow += len(e.text)
	}
	slices.SortStableFunc(order, func(a, b int) int { return at[a].pos - at[b].pos })
	var b strings.Builder
	b.Grow(len(sql) + grow)
	pos := 0
	for _, i := range order {
		b.WriteString(sql[pos:at[i].pos])
		if starts != nil {
			starts[i] = b.Len()
		}
		b.WriteString(edits[i].text)
		pos = at[i].end
	}
	b.WriteString(sql[pos:])
	return b.String()
}

func (r *rewriter) text(from, to int) string { return r.sql[r.toks[from].start:r.toks[to-1].end] }
