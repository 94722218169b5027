// Package sqlident holds what sqlfence knows about PostgreSQL identifiers and literals:
// reading a name as the server does (folding, quoting, the 63-byte limit) and writing
// one back so that it reads as the same name. The driver, the claim helpers and the
// sqlfence command all use it, so they never disagree about what a name means.
package sqlident

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// MaxBytes is PostgreSQL's identifier limit (NAMEDATALEN - 1); longer names are cut.
const MaxBytes = 63

// Quote quotes an identifier unless PostgreSQL would read it back unchanged
// without quotes. Keywords are always quoted: harmless, and no keyword list to drift.
func Quote(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || 'a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '$')
	}
	if plain && !isKeyword(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func isKeyword(s string) bool {
	if v, ok := keywordMemo.Load(s); ok {
		return v.(bool)
	}
	scan, err := pgquery.Scan(s)
	kw := err != nil || len(scan.Tokens) != 1 || scan.Tokens[0].KeywordKind != pg.KeywordKind_NO_KEYWORD
	// A fence names the same few columns and aliases over and over, and asking the
	// scanner costs microseconds. The memo is bounded: names come from the
	// application's text, which may be built per call.
	if len(s) <= MaxBytes && keywordMemoSize.Add(1) <= keywordMemoMax {
		keywordMemo.Store(strings.Clone(s), kw)
	}
	return kw
}

var (
	keywordMemo     sync.Map // plain identifier → whether the scanner reads a keyword
	keywordMemoSize atomic.Int64
)

const keywordMemoMax = 4096

// QuoteQualified quotes each part and joins them with dots.
func QuoteQualified(parts ...string) string {
	q := make([]string, len(parts))
	for i, s := range parts {
		q[i] = Quote(s)
	}
	return strings.Join(q, ".")
}

// Literal quotes s as a string literal. standard_conforming_strings is on (the default
// since PostgreSQL 9.1, and pinned on by the driver), so only the quote is doubled.
func Literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Split parses dot-separated SQL identifiers the way PostgreSQL's
// scanner does: unquoted parts fold to lower case (ASCII only, as PostgreSQL
// does in UTF-8 databases), quoted parts are exact with "" for a quote, and
// every part is truncated to 63 bytes.
func Split(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty name")
	}
	var parts []string
	i := 0
	for {
		var part string
		if s[i] == '"' {
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					return nil, errors.New("unbalanced double quote")
				}
				b.WriteString(s[j : j+k])
				j += k + 1
				if j < len(s) && s[j] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			part = b.String()
			if part == "" {
				return nil, errors.New(`empty quoted identifier ""`)
			}
			i = j
			if i < len(s) && s[i] != '.' {
				return nil, fmt.Errorf("unexpected %q after a quoted identifier", s[i:])
			}
		} else {
			j := i
			for j < len(s) && s[j] != '.' {
				j++
			}
			raw := s[i:j]
			if raw == "" {
				return nil, errors.New("empty part (stray dot)")
			}
			if err := checkUnquoted(raw); err != nil {
				return nil, err
			}
			part = Fold(raw)
			i = j
		}
		parts = append(parts, Truncate(part))
		if i == len(s) {
			return parts, nil
		}
		i++ // the dot
		if i == len(s) {
			return nil, errors.New("empty part (trailing dot)")
		}
	}
}

// checkUnquoted accepts what PostgreSQL's scanner takes as an unquoted
// identifier: [A-Za-z_][A-Za-z0-9_$]*, where PostgreSQL also takes any
// non-ASCII character. Non-ASCII spaces, control and format characters are
// refused even so: in a config file they are invisible mistakes, not names.
func checkUnquoted(s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return errors.New("invalid UTF-8")
		case r >= utf8.RuneSelf:
			if !unicode.IsPrint(r) {
				return fmt.Errorf("character %U is not allowed in an unquoted identifier", r)
			}
		case r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case i > 0 && ('0' <= r && r <= '9' || r == '$'):
		default:
			if i == 0 && ('0' <= r && r <= '9' || r == '$') {
				return fmt.Errorf("an unquoted identifier cannot start with %q", r)
			}
			return fmt.Errorf("character %q is not allowed in an unquoted identifier (quote the name to use it)", r)
		}
	}
	return nil
}

// Fold lower-cases ASCII letters only, as PostgreSQL folds unquoted identifiers (and
// as a case-insensitive search for a folded name must compare).
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Truncate cuts s to PostgreSQL's 63-byte limit without splitting
// a UTF-8 character, as pg_mbcliplen does.
func Truncate(s string) string {
	if len(s) <= MaxBytes {
		return s
	}
	n := MaxBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Distance is the Levenshtein distance of a and b, by bytes, with a transposition
// counting once (inventroy is one step from inventory): how far a misspelt name is
// from one that exists, for the "did you mean" of catalog names and DSN parameters.
func Distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
