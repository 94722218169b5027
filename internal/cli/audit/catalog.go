package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// relation is a table the policy protects, as the database has it: the table itself
// (in every schema, when the policy does not qualify it), its partitions and its
// inheritance children, from pgcatalog.Relations (the query resolve: catalog uses).
type relation struct {
	oid       uint32
	name      string // schema-qualified, quoted as needed
	kind      string // r table, p partitioned table, f foreign table
	depth     int    // 0 the table itself, 1+ a partition or child
	epochType string // the epoch column's type, "" when it has none
	table     *sqlfence.Table
}

// resolveTables finds the policy's tables in the database. A policy table that does
// not exist (named with the tables called most like it), or a relation without the
// epoch column, is an error.
func resolveTables(ctx context.Context, conn *pgx.Conn, pol *sqlfence.Policy) ([]relation, error) {
	var out []relation
	var problems []string
	query := cmdutil.QueryFunc(conn)
	for i := range pol.Tables {
		t := &pol.Tables[i]
		rels, err := pgcatalog.Relations(ctx, query, t.Schema, t.Name, t.EpochColumn)
		if err != nil {
			return nil, err
		}
		if len(rels) == 0 {
			problems = append(problems, fmt.Sprintf("table %s (policy line %d) does not exist in the database%s",
				t.QualifiedName, t.Line, similarHint(ctx, query, t.Schema, t.Name)))
		}
		for _, rel := range rels {
			if rel.IsView() {
				continue // no rows of its own: its tables are on the list
			}
			r := relation{table: t, oid: rel.OID, name: sqlident.QuoteQualified(rel.Schema, rel.Name), kind: rel.Kind, depth: rel.Depth, epochType: rel.EpochType}
			if r.epochType == "" {
				problems = append(problems, fmt.Sprintf("%s has no epoch column %s (policy line %d)", r.name, sqlident.Quote(t.EpochColumn), t.Line))
			}
			out = append(out, r)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the policy %s does not match the database:\n  %s", pol.Source, strings.Join(problems, "\n  "))
	}
	return out, nil
}
