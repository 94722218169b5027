// Package pgcatalog holds the catalog queries sqlfence runs: which relations a
// protected table's rows can be written through. The driver (resolve: catalog) and the
// sqlfence command (guard, audit) ask the same question with the same query, so they
// never disagree about which relations a policy entry covers.
package pgcatalog

import (
	"context"
	"fmt"
	"strings"
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

// RelationsSQL is the query Relations runs, with SQL expressions for the schema (”
// or NULL: every schema), the table name and the epoch column: the guard's install
// function runs the same query inside the database with its own arguments. Its columns
// are those of Relation, in order: oid (int8), schema, name, relkind, depth (int8),
// epoch column type (” when none), epoch column NOT NULL. System schemas, sqlfence's
// own and temporary schemas are left out: another session's temporary table is
// visible in pg_class to every session but written only by its own.
func RelationsSQL(schema, name, epochColumn string) string {
	return strings.NewReplacer("{schema}", schema, "{name}", name, "{epoch}", epochColumn).Replace(relationsTemplate)
}

const relationsTemplate = `
WITH RECURSIVE base AS (
	SELECT c.oid FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
	WHERE c.relname = {name} AND (coalesce({schema}, '') = '' OR ns.nspname = {schema})
	  AND c.relkind IN ('r', 'p', 'f')
	  AND ns.nspname NOT IN ('pg_catalog', 'information_schema', 'sqlfence')
	  AND ns.nspname NOT LIKE 'pg\_temp\_%' AND ns.nspname NOT LIKE 'pg\_toast%'
), tree (oid, depth) AS (
	SELECT b.oid, 0 FROM base b
	UNION
	SELECT i.inhrelid, t.depth + 1 FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid
), views (oid, depth) AS (
	-- The views over the tree first (OFFSET 0 keeps the planner from testing every
	-- rule's view, the hundred system views included: pg_relation_is_updatable opens
	-- each view it is asked about, which on a new connection costs milliseconds).
	SELECT v.oid, v.depth FROM (
		SELECT rw.ev_class AS oid, min(t.depth) AS depth FROM pg_rewrite rw
		JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
		JOIN tree t ON d.refobjid = t.oid
		JOIN pg_class v ON v.oid = rw.ev_class AND v.relkind = 'v'
		GROUP BY rw.ev_class
		OFFSET 0
	) v
	WHERE pg_relation_is_updatable(v.oid, false) & 28 <> 0
), rels (oid, depth) AS (
	SELECT oid, min(depth) FROM (SELECT * FROM tree UNION ALL SELECT * FROM views) x GROUP BY oid
)
SELECT x.oid::int8, ns.nspname::text, c.relname::text, c.relkind::text, x.depth::int8,
       coalesce(format_type(a.atttypid, a.atttypmod), ''), coalesce(a.attnotnull, false)
FROM rels x
JOIN pg_class c ON c.oid = x.oid
JOIN pg_namespace ns ON ns.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = {epoch} AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY x.depth, 2, 3`

// QueryFunc runs a query with positional arguments and returns every row, each value
// as the driver returns it. The driver adapts driver.QueryerContext to it, the command
// a pgx connection.
type QueryFunc func(ctx context.Context, sql string, args ...any) ([][]any, error)

// Relations lists the relations a protected table's rows can be written through,
// shallowest first. An empty result means no such table exists.
func Relations(ctx context.Context, query QueryFunc, schema, name, epochColumn string) ([]Relation, error) {
	r := RelationsRead(schema, name, epochColumn)
	rows, err := query(ctx, r.SQL, r.Args...)
	if err != nil {
		return nil, err
	}
	return DecodeRelations(rows)
}

// RelationsRead is Relations as one of a catalog read's queries (Reads); its rows
// are DecodeRelations'.
func RelationsRead(schema, name, epochColumn string) Read {
	return Read{What: "the relations of " + name, SQL: RelationsSQL("$1::text", "$2::text", "$3::text"),
		Args: []any{schema, name, epochColumn}, Columns: 7, Order: "c5, c2, c3"}
}

// DecodeRelations reads the rows of RelationsSQL.
func DecodeRelations(rows [][]any) ([]Relation, error) {
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
