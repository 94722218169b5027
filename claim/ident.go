package claim

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// name is a table, sequence or column name as PostgreSQL resolves it, kept
// both as parts (for messages) and as SQL text with every part quoted.
//
// Names in a config are written the way they are written in SQL and in the
// sqlfence policy file: unquoted parts fold to lower case, "Quoted" parts are
// exact. The SQL text quotes every part, so a name can never change the
// statement it is spliced into, whatever it contains.
type name struct {
	parts []string
	sql   string
}

func (n name) String() string { return strings.Join(n.parts, ".") }

// last is the unqualified name, for deriving index names.
func (n name) last() string { return n.parts[len(n.parts)-1] }

// parseName reads a possibly qualified name; maxParts is 1 for a column and
// 2 for a relation (schema.name).
func parseName(what, s string, maxParts int) (name, error) {
	parts, err := splitIdent(s)
	if err == nil && len(parts) > maxParts {
		if maxParts == 1 {
			err = errors.New(`a column name is a single identifier (quote it, '"a.b"', if the dot is part of the name)`)
		} else {
			err = fmt.Errorf("%d dot-separated parts; use name or schema.name", len(parts))
		}
	}
	if err != nil {
		return name{}, fmt.Errorf("claim: bad %s %q: %v", what, s, err)
	}
	return name{parts: parts, sql: pgx.Identifier(parts).Sanitize()}, nil
}

// splitIdent splits dot-separated SQL identifiers the way PostgreSQL's scanner
// reads them: unquoted parts fold to lower case (ASCII only, as PostgreSQL does
// in UTF-8 databases), quoted parts are exact with "" standing for a quote, and
// every part is truncated to 63 bytes. It is the policy file's rule, so a claim
// table named in a policy and in a claim config is the same table.
func splitIdent(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty name")
	}
	var parts []string
	for i := 0; ; {
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
			part, i = b.String(), j
			if part == "" {
				return nil, errors.New(`empty quoted identifier ""`)
			}
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
			for k, r := range raw {
				switch {
				case r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r >= utf8.RuneSelf && r != utf8.RuneError:
				case k > 0 && ('0' <= r && r <= '9' || r == '$'):
				default:
					return nil, fmt.Errorf("character %q is not allowed in an unquoted identifier (quote the name to use it)", r)
				}
			}
			part, i = foldASCII(raw), j
		}
		parts = append(parts, truncateIdent(part))
		if i == len(s) {
			return parts, nil
		}
		i++ // the dot
		if i == len(s) {
			return nil, errors.New("empty part (trailing dot)")
		}
	}
}

func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// truncateIdent cuts s to PostgreSQL's 63-byte identifier limit without
// splitting a UTF-8 character, as the server does.
func truncateIdent(s string) string {
	const max = 63
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// indexName derives an index name from a table name and a suffix, short
// enough that PostgreSQL does not truncate it (two tables whose truncated
// index names collided would share an IF NOT EXISTS index).
func indexName(table name, suffix string) string {
	base := truncateIdent(table.last())
	for len(base)+len(suffix) > 63 {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	return pgx.Identifier{base + suffix}.Sanitize()
}

// sqlLiteral quotes s as a string literal (standard_conforming_strings is on
// in every supported PostgreSQL).
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
