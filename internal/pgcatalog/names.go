// The names the policy is checked against: which relations are called like a missing
// one (for "did you mean"), which schemas an unqualified name resolves through, and
// which tables exist in several of them.

package pgcatalog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// similarSQL lists the user relations whose name is within three characters' length
// of $1, in $2's schema when $2 is not ”: the candidates Similar ranks. The length
// bound keeps the answer small on a database with thousands of tables.
const similarSQL = `
SELECT ns.nspname::text, c.relname::text
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'f', 'v')
  AND ns.nspname NOT IN ('pg_catalog', 'information_schema', 'sqlfence')
  AND ns.nspname NOT LIKE 'pg\_temp\_%' AND ns.nspname NOT LIKE 'pg\_toast%'
  AND pg_catalog.abs(pg_catalog.length(c.relname) - pg_catalog.length($1::text)) <= 3
  AND ($2::text = '' OR ns.nspname = $2::text)`

// Similar returns up to three existing relations whose names are closest to name
// (edit distance at most a third of its length, at least 2), closest first, each
// schema-qualified: what a typo in the policy most likely meant.
func Similar(ctx context.Context, query QueryFunc, schema, name string) ([]string, error) {
	rows, err := query(ctx, similarSQL, name, schema)
	if err != nil {
		return nil, err
	}
	type cand struct {
		name string
		dist int
	}
	limit := max(2, len(name)/3)
	var cs []cand
	for _, row := range rows {
		if len(row) != 2 {
			return nil, fmt.Errorf("pgcatalog: similar names query returned %d columns, want 2", len(row))
		}
		s, ok1 := row[0].(string)
		n, ok2 := row[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("pgcatalog: similar names query returned unexpected types %T", row)
		}
		if d := sqlident.Distance(strings.ToLower(name), strings.ToLower(n)); d <= limit {
			cs = append(cs, cand{s + "." + n, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, 3)
	for _, c := range cs {
		if len(out) == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out, nil
}

// searchPathSQL lists the schemas an unqualified name resolves through, in order
// (current_schemas without the implicit pg_catalog and pg_temp).
const searchPathSQL = `SELECT s::text FROM pg_catalog.unnest(pg_catalog.current_schemas(false)) s`

// SearchPath returns the session's effective search path: the schemas that exist
// and that an unqualified name resolves through, in order.
func SearchPath(ctx context.Context, query QueryFunc) ([]string, error) {
	return strings1(ctx, query, "search path", searchPathSQL)
}

// strings1 runs a query of one text column and returns its values; what names the
// query in the error for a row of another shape.
func strings1(ctx context.Context, query QueryFunc, what, sql string, args ...any) ([]string, error) {
	rows, err := query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return Strings(what, rows)
}

func rowString(row []any) (string, bool) {
	if len(row) != 1 {
		return "", false
	}
	s, ok := row[0].(string)
	return s, ok
}
