// Package pgcatalog holds the catalog queries sqlfence runs: which relations a
// protected table's rows can be written through. The driver (resolve: catalog) and the
// sqlfence command (guard, audit) ask the same question with the same query, so they
// never disagree about which relations a policy entry covers.
package pgcatalog

import (
	"context"
	"fmt"
)

// Relation is a relation through which a protected table's rows can be written: the
// table itself, a partition or inheritance child at any depth, or an auto-updatable
// view over any of them.
type Relation struct {
	OID    uint32
	Schema string
	Name   string
	// Kind is pg_class.relkind: r table, p partitioned table, f foreign table, v view.
	Kind string
	// Depth is 0 for the table itself and 1 or more for a partition or child; views
	// have the depth of the shallowest relation they read.
	Depth int
	// EpochType is the epoch column's type as format_type spells it, "" when the
	// relation has no such column; EpochNotNull is its NOT NULL constraint.
	EpochType    string
	EpochNotNull bool
}

// IsView reports whether r is a view: it takes no row triggers, and writes through it
// reach the tables under it.
func (r Relation) IsView() bool { return r.Kind == "v" }

// relationsQuery lists, for $1 schema (empty: every schema), $2 table name and $3 epoch
// column, the relations Relation describes. System schemas, sqlfence's own and other
// sessions' temporary schemas are left out: a temporary table is visible in pg_class to
// every session but written only by its own.
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
), views (oid, depth) AS (
	SELECT r.ev_class, min(t.depth) FROM pg_rewrite r
	JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
	JOIN tree t ON d.refobjid = t.oid
	JOIN pg_class v ON v.oid = r.ev_class AND v.relkind = 'v'
	WHERE pg_relation_is_updatable(r.ev_class, false) & 28 <> 0
	GROUP BY r.ev_class
), rels (oid, depth) AS (
	SELECT oid, min(depth) FROM (SELECT * FROM tree UNION ALL SELECT * FROM views) x GROUP BY oid
)
SELECT x.oid::int8, ns.nspname::text, c.relname::text, c.relkind::text, x.depth::int8,
       coalesce(format_type(a.atttypid, a.atttypmod), ''), coalesce(a.attnotnull, false)
FROM rels x
JOIN pg_class c ON c.oid = x.oid
JOIN pg_namespace ns ON ns.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY x.depth, 2, 3`

// QueryFunc runs a query with positional arguments and returns every row, each value
// as the driver returns it. The driver adapts driver.QueryerContext to it, the command
// a pgx connection.
type QueryFunc func(ctx context.Context, sql string, args ...any) ([][]any, error)

// Relations lists the relations a protected table's rows can be written through,
// shallowest first. An empty result means no such table exists.
func Relations(ctx context.Context, query QueryFunc, schema, name, epochColumn string) ([]Relation, error) {
	rows, err := query(ctx, relationsQuery, schema, name, epochColumn)
	if err != nil {
		return nil, err
	}
	out := make([]Relation, 0, len(rows))
	for _, row := range rows {
		if len(row) != 7 {
			return nil, fmt.Errorf("pgcatalog: relations query returned %d columns, want 7", len(row))
		}
		oid, ok1 := row[0].(int64)
		depth, ok2 := row[4].(int64)
		r := Relation{OID: uint32(oid), Depth: int(depth)}
		var ok3, ok4, ok5, ok6, ok7 bool
		r.Schema, ok3 = row[1].(string)
		r.Name, ok4 = row[2].(string)
		r.Kind, ok5 = row[3].(string)
		r.EpochType, ok6 = row[5].(string)
		r.EpochNotNull, ok7 = row[6].(bool)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 {
			return nil, fmt.Errorf("pgcatalog: relations query returned unexpected types %T", row)
		}
		out = append(out, r)
	}
	return out, nil
}
