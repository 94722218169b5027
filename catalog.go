package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// resolveCatalog reads, over the first connection, what the policy's names cannot
// say: the partitions, inheritance children and updatable views through which a
// protected table can also be written, and whether each epoch column is one the fence
// can work with. It returns the policy extended with those relations.
func resolveCatalog(ctx context.Context, c driver.Conn, p *Policy) (*Policy, error) {
	q, ok := c.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("sqlfence: resolve: catalog needs a driver that implements QueryerContext")
	}
	var extra []Table
	seen := map[QualifiedName]bool{}
	for _, t := range p.Tables {
		seen[t.QualifiedName] = true
	}
	var problems []string
	for _, t := range p.Tables {
		rows, err := queryAll(ctx, q, catalogQuery, t.Schema, t.Name, t.EpochColumn)
		if err != nil {
			return nil, fmt.Errorf("sqlfence: resolve: catalog: reading %s: %w", t.QualifiedName, err)
		}
		if len(rows) == 0 {
			problems = append(problems, fmt.Sprintf("table %s (policy line %d) does not exist in the database", t.QualifiedName, t.Line))
			continue
		}
		for _, r := range rows {
			schema, name, kind, typ := r[0].(string), r[1].(string), r[2].(string), r[3]
			notNull, _ := r[4].(bool)
			rel := QualifiedName{Schema: schema, Name: name}
			target := fmt.Sprintf("%s.%s", sqlident.Quote(schema), sqlident.Quote(name))
			switch {
			case typ == nil && kind == "v":
				// A view that does not show the epoch column cannot carry the fence.
				if !seen[rel] {
					seen[rel] = true
					extra = append(extra, Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode,
						unfenceable: "the view " + target + " writes the protected table " + t.QualifiedName.String() + " but has no " + sqlident.Quote(t.EpochColumn) + " column"})
				}
				continue
			case typ == nil:
				problems = append(problems, fmt.Sprintf("%s has no epoch column %s: ALTER TABLE %s ADD COLUMN %s bigint NOT NULL DEFAULT 0",
					target, sqlident.Quote(t.EpochColumn), target, sqlident.Quote(t.EpochColumn)))
				continue
			case typ.(string) != "bigint":
				problems = append(problems, fmt.Sprintf("%s.%s is %s; the epoch column must be bigint: ALTER TABLE %s ALTER COLUMN %s TYPE bigint",
					target, sqlident.Quote(t.EpochColumn), typ, target, sqlident.Quote(t.EpochColumn)))
				continue
			case kind != "v" && !notNull:
				problems = append(problems, fmt.Sprintf("%s.%s is nullable, and a NULL epoch fences every write to its row forever (NULL < $e is never true): "+
					"UPDATE %s SET %s = 0 WHERE %s IS NULL; ALTER TABLE %s ALTER COLUMN %s SET NOT NULL",
					target, sqlident.Quote(t.EpochColumn), target, sqlident.Quote(t.EpochColumn), sqlident.Quote(t.EpochColumn), target, sqlident.Quote(t.EpochColumn)))
				continue
			}
			if !seen[rel] && !(t.Schema == "" && rel.Name == t.Name) {
				seen[rel] = true
				extra = append(extra, Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode, Line: t.Line})
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("sqlfence: policy %s, resolve: catalog:\n  %s", p.Source, strings.Join(problems, "\n  "))
	}
	return p.withTables(extra), nil
}

// catalogQuery lists a protected table (every schema, when the policy does not
// qualify it), its partitions and inheritance children at any depth, and the
// auto-updatable views that read from any of them, each with its epoch column's type
// and nullability (NULL type: no such column).
const catalogQuery = `
WITH RECURSIVE base AS (
	SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE c.relname = $2 AND ($1 = '' OR n.nspname = $1) AND c.relkind IN ('r', 'p', 'f')
), tree AS (
	SELECT oid FROM base
	UNION
	SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid
), views AS (
	SELECT DISTINCT r.ev_class AS oid FROM pg_rewrite r
	JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
	JOIN tree ON d.refobjid = tree.oid
	JOIN pg_class v ON v.oid = r.ev_class AND v.relkind = 'v'
	WHERE pg_relation_is_updatable(r.ev_class, false) & 28 <> 0
)
SELECT n.nspname::text, c.relname::text, c.relkind::text, format_type(a.atttypid, a.atttypmod), a.attnotnull
FROM (SELECT oid FROM tree UNION SELECT oid FROM views) x
JOIN pg_class c ON c.oid = x.oid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = $3 AND NOT a.attisdropped
ORDER BY 1, 2`

func queryAll(ctx context.Context, q driver.QueryerContext, query string, args ...any) ([][]driver.Value, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	rows, err := q.QueryContext(ctx, query, named)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]driver.Value
	for {
		row := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(row); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		out = append(out, row)
	}
}
