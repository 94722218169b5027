package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// The catalog query that expands a policy table into the relations it covers. The root
// package (catalog.go) and the guard's install_guard function (guard's
// triggers_sql.go, run inside the database) have their own; this one is kept alone in
// this file so that they can move to one shared place.

// relation is a table the policy protects, as the database has it: the table itself
// (in every schema, when the policy does not qualify it), its partitions and its
// inheritance children.
type relation struct {
	oid       uint32
	name      string // schema-qualified, quoted as needed
	kind      string // r table, p partitioned table, f foreign table
	depth     int    // 0 the table itself, 1+ a partition or child
	epochType string // the epoch column's type, "" when it has none
	table     *sqlfence.Table
}

const relationsQuery = `
WITH RECURSIVE base AS (
	SELECT c.oid FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
	WHERE c.relname = $2 AND ($1 = '' OR ns.nspname = $1)
	  AND c.relkind IN ('r', 'p', 'f')
	  AND ns.nspname NOT IN ('pg_catalog', 'information_schema', 'sqlfence')
	  AND ns.nspname NOT LIKE 'pg\_temp\_%' AND ns.nspname NOT LIKE 'pg\_toast%'
), tree (oid, depth) AS (
	SELECT b.oid, 0 FROM base b
	UNION
	SELECT i.inhrelid, t.depth + 1 FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid
)
SELECT t.oid, quote_ident(ns.nspname) || '.' || quote_ident(c.relname), c.relkind::text, min(t.depth),
       coalesce((SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
                 WHERE a.attrelid = t.oid AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped), '')
FROM tree t JOIN pg_class c ON c.oid = t.oid JOIN pg_namespace ns ON ns.oid = c.relnamespace
GROUP BY t.oid, ns.nspname, c.relname, c.relkind
ORDER BY min(t.depth), 2`

// resolveTables finds the policy's tables in the database. A policy table that does
// not exist, or a relation without the epoch column, is an error.
func resolveTables(ctx context.Context, conn *pgx.Conn, pol *sqlfence.Policy) ([]relation, error) {
	var out []relation
	var problems []string
	for i := range pol.Tables {
		t := &pol.Tables[i]
		rows, err := conn.Query(ctx, relationsQuery, t.Schema, t.Name, t.EpochColumn)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			r := relation{table: t}
			if err := rows.Scan(&r.oid, &r.name, &r.kind, &r.depth, &r.epochType); err != nil {
				rows.Close()
				return nil, err
			}
			if r.epochType == "" {
				problems = append(problems, fmt.Sprintf("%s has no epoch column %s (policy line %d)", r.name, cmdutil.QuoteIdent(t.EpochColumn), t.Line))
			}
			out = append(out, r)
			n++
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n == 0 {
			problems = append(problems, fmt.Sprintf("table %s (policy line %d) does not exist in the database", t.QualifiedName, t.Line))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the policy %s does not match the database:\n  %s", pol.Source, strings.Join(problems, "\n  "))
	}
	return out, nil
}
