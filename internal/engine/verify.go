// Verification: the nodes the fence adds, built as the grammar builds them, and the
// comparison of the re-parsed result with the intended tree.

package engine

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The nodes the fence adds, built exactly as the parser builds them from the text the
// rewrite inserts, so that verify can compare trees.

// verify parses the rewritten text and compares its tree with the tree the rewrite
// meant to produce (the original, with the fence nodes added). Anything else — a
// misplaced insertion, a clause the rewrite misread — is refused, never sent. The
// output is the input, within pgtree.Limit, plus the fence: it is held to
// pgtree.OutputLimit, which allows for what the fence adds.
func verify(want *pg.ParseResult, out string) *Error {
	same, err := pgtree.ParseMatches(want, out, pgtree.OutputLimit)
	if err != nil {
		return unexpected(nil, "the fenced statement does not parse: "+err.Error())
	}
	if !same {
		return unexpected(nil, "the fenced statement does not parse to the intended tree")
	}
	return nil
}

// paramRange returns the lowest and highest parameter number in a parsed statement.
// Every $n token is a ParamRef in the tree and nothing else is, so the scanner's
// tokens give the numbers without walking the tree; the grammar reads the number
// with atol, so a token spelled in a way other than plain digits, or too long to
// be read the same way here, sends the question to the tree.
func paramRange(sql string, toks []token, tree *pg.ParseResult) (lo, hi int32) {
	lo = 1
	for _, t := range toks {
		if t.tok != pg.Token_PARAM {
			continue
		}
		digits := sql[t.start+1 : t.end]
		if len(digits) == 0 || len(digits) > 9 {
			return minParam(tree), maxParam(tree)
		}
		n := int32(0)
		for i := 0; i < len(digits); i++ {
			c := digits[i]
			if c < '0' || c > '9' {
				return minParam(tree), maxParam(tree)
			}
			n = 10*n + int32(c-'0')
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	return lo, hi
}

func minParam(tree *pg.ParseResult) int32 {
	n := int32(1)
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg.ParamRef); ok && p.Number < n {
			n = p.Number
		}
		return true
	})
	return n
}

func maxParam(tree *pg.ParseResult) int32 {
	var n int32
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg.ParamRef); ok && p.Number > n {
			n = p.Number
		}
		return true
	})
	return n
}
