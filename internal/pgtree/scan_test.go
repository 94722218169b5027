package pgtree

import (
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestScanTokens: the direct reading of the scanner's output gives what pg.Scan
// gives, token for token.
func TestScanTokens(t *testing.T) {
	for _, q := range []string{
		``,
		`SELECT 1`,
		`UPDATE inventory SET quantity = quantity - $1 WHERE sku = 'sku-1' /* c */ -- x`,
		`SELECT E'a\'b', U&'\0041' UESCAPE '!', B'101', X'ff', 1.5e3, 99999999999, $$x$$, "q""i"`,
		`SELECT 'unterminated`,
		"SELECT 'a'\n'b' FROM café",
	} {
		want, werr := pgquery.Scan(q)
		got, gerr := ScanTokens(q, nil)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q: errors %v / %v", q, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if len(got) != len(want.Tokens) {
			t.Fatalf("%q: %d tokens, want %d", q, len(got), len(want.Tokens))
		}
		for i, w := range want.Tokens {
			if g := got[i]; g.Start != w.Start || g.End != w.End || g.Kind != w.Token {
				t.Fatalf("%q: token %d is %+v, want %v", q, i, g, w)
			}
		}
	}
}
