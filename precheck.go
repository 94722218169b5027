// The pre-check that lets statements which cannot name a protected table skip the parser.

package sqlfence

import (
	"slices"
	"strings"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// mayTouchProtected is the pre-check that lets most statements skip the parser. It
// must never say no to a statement PostgreSQL would resolve to a protected table or a
// listed function: unquoted identifiers fold ASCII letters to lower case, so an ASCII
// case-insensitive search for every protected name is sound for plain and quoted
// identifiers; U&"…" identifiers can spell a name with escapes, so any U& forces a parse.
func mayTouchProtected(needles []string, sql string) bool {
	for _, n := range needles {
		if containsFold(sql, n) {
			return true
		}
	}
	return containsFold(sql, `u&"`)
}

// needlesOf lists what mayTouchProtected searches for: every protected table's and
// listed function's name, ASCII lower case, and its quoted spelling when it has a quote.
func needlesOf(p *Policy) []string {
	var out []string
	add := func(name string) {
		for _, n := range []string{sqlident.Fold(name), sqlident.Fold(strings.ReplaceAll(name, `"`, `""`))} {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, t := range p.Tables {
		add(t.Name)
	}
	for _, f := range p.Functions {
		add(f.Name)
	}
	for _, c := range p.Claims {
		add(c.Name)
	}
	add(standardStrings)
	add("set_config")
	return out
}

// containsFold reports whether s contains lower (already ASCII lower case), comparing
// ASCII letters case-insensitively.
func containsFold(s, lower string) bool {
	n := len(lower)
	if n == 0 {
		return true
	}
	first := lower[0]
	for i := 0; i+n <= len(s); i++ {
		c := s[i]
		if c|0x20 != first && c != first {
			continue
		}
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
