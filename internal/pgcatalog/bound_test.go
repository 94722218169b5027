package pgcatalog_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// TestBoundViewsAnswersForBound: in a database with no routine in a user schema,
// BoundViewsSQL returns exactly BoundSQL's rows — over views of views, inheritance,
// partitions, a materialized view, and every object the full query reads that needs no
// user routine (domains, casts and constraints, indexes, policies, statistics over
// built-ins) — and RoutinesSQL says so; one function later, RoutinesSQL says there is
// one (the short form no longer answers).
func TestBoundViewsAnswersForBound(t *testing.T) {
	t.Parallel()
	conn := connect(t, pgtest.NewDB(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, `
CREATE DOMAIN pos AS int CHECK (VALUE > 0) DEFAULT 1;
CREATE TYPE pair AS (a pos, b text);
CREATE TABLE base (id int PRIMARY KEY, n pos, p pair, t text DEFAULT upper('x') CHECK (length(t) < 10), g int GENERATED ALWAYS AS (id * 2) STORED);
CREATE INDEX base_lower ON base (lower(t)) WHERE n > 1;
CREATE STATISTICS base_stats ON (n + 1), id FROM base;
CREATE TABLE child (extra int) INHERITS (base);
CREATE TABLE parted (id int, k text) PARTITION BY LIST (lower(k));
CREATE TABLE parted_a PARTITION OF parted FOR VALUES IN ('a');
CREATE VIEW v1 AS SELECT id, upper(t) AS t FROM base;
CREATE VIEW v2 AS SELECT v1.id FROM v1 JOIN parted ON parted.id = v1.id;
CREATE MATERIALIZED VIEW mv AS SELECT count(*) FROM v2;
ALTER TABLE base ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON base USING (id > abs(-1));
CREATE CAST (pair AS text) WITH INOUT AS IMPLICIT;`); err != nil {
		t.Fatal(err)
	}
	q := pgcatalog.PgxQuery(conn, pgx.QueryExecModeExec)
	routines := func() bool {
		t.Helper()
		rows, err := q(ctx, pgcatalog.RoutinesSQL)
		if err != nil {
			t.Fatal(err)
		}
		some, err := pgcatalog.Bool("user routines", rows)
		if err != nil {
			t.Fatal(err)
		}
		return some
	}
	if routines() {
		t.Fatal("RoutinesSQL found a user routine in a database that has none")
	}
	full, err := q(ctx, pgcatalog.BoundSQL)
	if err != nil {
		t.Fatal(err)
	}
	short, err := q(ctx, pgcatalog.BoundViewsSQL)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) < 5 {
		t.Fatalf("BoundSQL returned %d rows; the schema has views and children enough for more: %v", len(full), full)
	}
	sortRows(full)
	sortRows(short)
	if !reflect.DeepEqual(full, short) {
		t.Fatalf("with no user routine, BoundViewsSQL is not BoundSQL:\nfull  %v\nshort %v", full, short)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA app; CREATE FUNCTION app.f() RETURNS int LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	if !routines() {
		t.Fatal("RoutinesSQL found no user routine after CREATE FUNCTION app.f()")
	}
	v, err := pgcatalog.Version(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Routines {
		t.Error("the catalog version's statement did not report the user routine")
	}
}

// sortRows orders rows by their printed form: the two queries' DISTINCT need not
// return them in one order.
func sortRows(rows [][]any) {
	slices.SortFunc(rows, func(a, b []any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
}
