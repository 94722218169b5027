package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// resolveCatalog reads, over a connection of the connector, what the policy's names
// cannot say: the partitions, inheritance children, parents and updatable views
// through which a protected table can also be written, whether each epoch column is
// one the fence can work with, and the snapshot the analysis judges the rest from —
// user functions, triggers, rules, foreign-key actions (snapshot.go). It returns the
// policy extended with those relations and that snapshot. The connector runs it at the
// first connection and again after DDL through the driver.
func resolveCatalog(ctx context.Context, c driver.Conn, p *Policy) (*Policy, error) {
	q, ok := c.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("sqlfence: resolve: catalog needs a driver that implements QueryerContext")
	}
	return resolveCatalogWith(ctx, func(ctx context.Context, sql string, args ...any) ([][]any, error) {
		return queryAll(ctx, q, sql, args...)
	}, p)
}

// resolveCatalogWith is resolveCatalog over any way of running a query.
func resolveCatalogWith(ctx context.Context, query pgcatalog.QueryFunc, p *Policy) (*Policy, error) {
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

// CheckCatalog reads the catalog as resolve: catalog does and returns what in it
// makes the driver refuse writes whose text does not show why: foreign keys whose
// actions cascade into protected tables, triggers and rules whose code writes
// protected tables (or cannot be read), and triggers and rules on protected tables
// that can change or redirect their rows. query runs one query with positional
// arguments and returns every row (int8 as int64, text as string, bool as bool).
// `sqlfence guard` reports these after installing.
func (p *Policy) CheckCatalog(ctx context.Context, query func(ctx context.Context, sql string, args ...any) ([][]any, error)) ([]CatalogFinding, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	r, err := resolveCatalogWith(ctx, query, c)
	if err != nil {
		return nil, err
	}
	return slices.Clone(r.catalog.findings), nil
}

// queryAll runs query on the inner connection and returns every row.
func queryAll(ctx context.Context, q driver.QueryerContext, query string, args ...any) ([][]any, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	rows, err := q.QueryContext(ctx, query, named)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for {
		row := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(row); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		vals := make([]any, len(row))
		for i, v := range row {
			vals[i] = v
		}
		out = append(out, vals)
	}
}
