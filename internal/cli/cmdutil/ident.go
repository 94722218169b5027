package cmdutil

import (
	"strings"

	"github.com/jackc/pgx/v5"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// The root package has its own copies of these quoting helpers; they are kept
// together here so that both can move to one shared package.

// QuoteIdent quotes a PostgreSQL identifier unless PostgreSQL would read it back
// unchanged without quotes.
func QuoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || 'a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '$')
	}
	if plain {
		if scan, err := pg.Scan(s); err == nil && len(scan.Tokens) == 1 && scan.Tokens[0].KeywordKind == pg.KeywordKind_NO_KEYWORD {
			return s
		}
	}
	return pgx.Identifier{s}.Sanitize()
}

// QuoteLiteral quotes a PostgreSQL string literal (standard_conforming_strings on).
func QuoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
