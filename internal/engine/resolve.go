// resolve: catalog, the reading: the relations a protected table can also be written
// through, its epoch column's type, and the snapshot of routines, triggers, rules and
// keys the analysis judges from (catalog.go).

package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Resolve reads, through query, what the policy's names cannot say: the partitions,
// inheritance children, parents and updatable views through which a protected table
// can also be written, whether each epoch column is one the fence can work with, and
// the snapshot the analysis judges the rest from — user functions, triggers, rules,
// foreign-key actions (catalog.go). It returns the policy extended with those
// relations and that snapshot.
func Resolve(ctx context.Context, query Querier, p *Policy) (*Policy, error) {
	var extra []Table
	seen := map[QualifiedName]bool{}
	for _, t := range p.Tables {
		seen[t.QualifiedName] = true
	}
	protected := map[uint32]*Table{}
	var problems []string
	for i := range p.Tables {
		t := &p.Tables[i]
		rels, err := pgcatalog.Relations(ctx, query, t.Schema, t.Name, t.EpochColumn)
		if err != nil {
			return nil, fmt.Errorf("sqlfence: resolve: catalog: reading %s: %w", t.QualifiedName, err)
		}
		if len(rels) == 0 {
			problems = append(problems, fmt.Sprintf("table %s (policy line %d) does not exist in the database", t.QualifiedName, t.Line))
			continue
		}
		col := sqlident.Quote(t.EpochColumn)
		for _, r := range rels {
			if protected[r.OID] == nil {
				protected[r.OID] = t
			}
			rel := QualifiedName{Schema: r.Schema, Name: r.Name}
			target := sqlident.QuoteQualified(r.Schema, r.Name)
			switch {
			case r.EpochType == "" && r.IsView():
				// A view that does not show the epoch column cannot carry the fence.
				if !seen[rel] {
					seen[rel] = true
					extra = append(extra, Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode, Stale: t.Stale,
						unfenceable: "the view " + target + " writes the protected table " + t.QualifiedName.String() + " but has no " + col + " column"})
				}
				continue
			case r.EpochType == "":
				problems = append(problems, fmt.Sprintf("%s has no epoch column %s: ALTER TABLE %s ADD COLUMN %s bigint NOT NULL DEFAULT 0",
					target, col, target, col))
				continue
			case r.EpochType != "bigint":
				problems = append(problems, fmt.Sprintf("%s.%s is %s; the epoch column must be bigint: ALTER TABLE %s ALTER COLUMN %s TYPE bigint",
					target, col, r.EpochType, target, col))
				continue
			case !r.IsView() && !r.EpochNotNull:
				problems = append(problems, fmt.Sprintf("%s.%s is nullable, and a NULL epoch fences every write to its row forever (NULL < $e is never true): "+
					"UPDATE %s SET %s = 0 WHERE %s IS NULL; ALTER TABLE %s ALTER COLUMN %s SET NOT NULL",
					target, col, target, col, col, target, col))
				continue
			}
			if !seen[rel] && !(t.Schema == "" && rel.Name == t.Name) {
				seen[rel] = true
				nt := Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode, Stale: t.Stale, Line: t.Line}
				if r.IsView() {
					nt.base = t.Name
				}
				extra = append(extra, nt)
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("sqlfence: policy %s, resolve: catalog:\n  %s", p.Source, strings.Join(problems, "\n  "))
	}
	var columns []string
	for _, t := range p.Tables {
		if !slices.Contains(columns, t.EpochColumn) {
			columns = append(columns, t.EpochColumn)
		}
	}
	snap, err := pgcatalog.LoadSnapshot(ctx, query, columns)
	if err != nil {
		return nil, fmt.Errorf("sqlfence: resolve: catalog: %w", err)
	}
	return p.withTables(extra).withSnapshot(snap, protected), nil
}

// Findings are what the catalog holds that makes the engine refuse writes whose text
// does not show why (what `sqlfence guard` reports).
func (p *Policy) Findings() []CatalogFinding {
	if p.catalog == nil {
		return nil
	}
	return slices.Clone(p.catalog.findings)
}
