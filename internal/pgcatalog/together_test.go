package pgcatalog_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgfunc"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// togetherSchema holds one of everything the snapshot reads, values of every type
// its columns carry (a SET clause, an aggregate's support functions, a rule's
// INSTEAD, NULL-free texts with quotes and newlines).
const togetherSchema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku);
CREATE TABLE inventory_a PARTITION OF inventory FOR VALUES IN ('a');
CREATE TABLE orders (id int PRIMARY KEY, sku text, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE lines (id int, order_id int REFERENCES orders ON DELETE CASCADE, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE VIEW inventory_v AS SELECT sku, quantity, writer_epoch FROM inventory;
CREATE MATERIALIZED VIEW totals AS SELECT sku, sum(quantity) AS q FROM inventory GROUP BY sku;
CREATE INDEX ON totals (lower(sku));
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql SET search_path = public AS $$BEGIN
  NEW.quantity := NEW.quantity + 1; -- 'quoted' "words"
  RETURN NEW; END$$;
CREATE TRIGGER t_touch BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION touch();
CREATE RULE r_log AS ON INSERT TO orders DO ALSO NOTIFY orders;
CREATE AGGREGATE mysum(int) (SFUNC = int4pl, STYPE = int);
CREATE FUNCTION plus(int, int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + $2';
CREATE OPERATOR #+# (LEFTARG = int, RIGHTARG = int, FUNCTION = plus);`

// TestReadsAsAlone: every query of the catalog read returns, sent together
// (pgcatalog.Reads), the rows it returns sent alone: the same values of the same
// types, and the relations in the same order.
func TestReadsAsAlone(t *testing.T) {
	conn := connect(t, pgtest.NewDB(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, togetherSchema); err != nil {
		t.Fatal(err)
	}
	q := pgcatalog.PgxQuery(conn, pgx.QueryExecModeExec)
	var reads pgcatalog.Reads
	reads.Add(pgcatalog.FingerprintRead())
	rel := reads.Add(pgcatalog.RelationsRead("", "inventory", "writer_epoch"))
	reads.Add(pgcatalog.RelationsRead("public", "orders", "writer_epoch"))
	for _, r := range pgcatalog.SnapshotReads([]string{"writer_epoch"}, true) {
		reads.Add(r)
	}
	got, err := reads.Run(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reads.Len() {
		r := reads.At(i)
		want, err := q(ctx, r.SQL, r.Args...)
		if err != nil {
			t.Fatalf("%s alone: %v", r.What, err)
		}
		g := got[i]
		if r.Order == "" {
			g, want = sortedRows(g), sortedRows(want)
		}
		if len(g) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("%s: together %v\nalone %v", r.What, g, want)
		}
	}
	if len(got[rel]) != 3 { // the table, its partition, the view
		t.Errorf("relations of inventory: %v", got[rel])
	}
}

func sortedRows(rows [][]any) [][]any {
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b []any) int {
		x, y := fmt.Sprintf("%#v", a), fmt.Sprintf("%#v", b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return out
}

// TestReadsOneSnapshot: the queries of one catalog read see one snapshot. Another
// session creates a table while the read is between two of its queries (the second
// waits on the first and sleeps; the third waits on the second); both count the
// table absent. The same queries sent one by one see it appear (the control).
func TestReadsOneSnapshot(t *testing.T) {
	dsn := pgtest.NewDB(t)
	conn, other := connect(t, dsn), connect(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := pgcatalog.PgxQuery(conn, pgx.QueryExecModeExec)
	count := func(name, from string) pgcatalog.Read {
		return pgcatalog.Read{What: name, SQL: `SELECT pg_catalog.count(*)::int8 FROM pg_catalog.pg_class c` + from + ` WHERE c.relname = $1::text`,
			Args: []any{name}, Columns: 1}
	}
	ddl := func(sql string) <-chan error {
		done := make(chan error, 1)
		go func() {
			time.Sleep(200 * time.Millisecond)
			_, err := other.Exec(ctx, sql)
			done <- err
		}()
		return done
	}

	var reads pgcatalog.Reads
	before := reads.Add(count("snap_t", ""))
	sleep := reads.Add(pgcatalog.Read{What: "a pause", SQL: `SELECT x.c1 FROM ` + reads.Ref(before) + ` x, pg_catalog.pg_sleep(0.8)`, Columns: 1})
	after := reads.Add(count("snap_t", `, (SELECT c1 FROM `+reads.Ref(sleep)+`) s`))
	done := ddl(`CREATE TABLE snap_t (id int)`)
	rows, err := reads.Run(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b, a := rows[before][0][0], rows[after][0][0]; b != int64(0) || a != int64(0) {
		t.Fatalf("together: snap_t counted %v before the pause and %v after it, want 0 and 0 (one snapshot)", b, a)
	}

	// The control: one by one, the second count sees the table.
	first := count("snap_u", "")
	done = ddl(`CREATE TABLE snap_u (id int)`)
	b, err := q(ctx, first.SQL, first.Args...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q(ctx, `SELECT pg_catalog.pg_sleep(0.8)::text`); err != nil {
		t.Fatal(err)
	}
	a, err := q(ctx, first.SQL, first.Args...)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b[0][0] != int64(0) || a[0][0] != int64(1) {
		t.Fatalf("one by one: snap_u counted %v then %v, want 0 then 1", b[0][0], a[0][0])
	}
}

// TestBuiltinsAgainstList: the more volatile of the embedded list's answer
// (pgfunc.Builtin) and the server's answer to BuiltinsSQL, the functions the list
// does not know or knows as less volatile, is for every name the more volatile of
// the list's and what the whole of pg_proc's pg_catalog says (what the driver used
// before it sent the list) — on a stock server, and where a superuser created a
// function in pg_catalog, made a built-in more volatile (immutable to stable, or to
// volatile), or added a more volatile overload to one (each of which the answer must
// hold).
func TestBuiltinsAgainstList(t *testing.T) {
	conn := connect(t, pgtest.NewDB(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := pgcatalog.PgxQuery(conn, pgx.QueryExecModeExec)
	const whole = `SELECT p.proname::text, max(p.provolatile::text) FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'pg_catalog'::regnamespace GROUP BY 1`
	check := func(when string, want map[string]string) {
		t.Helper()
		rows, err := q(ctx, whole)
		if err != nil {
			t.Fatal(err)
		}
		server := map[string]string{}
		for _, r := range rows {
			server[r[0].(string)] = r[1].(string)
		}
		diff, err := q(ctx, pgcatalog.BuiltinsSQL, pgcatalog.BuiltinsArgs()...)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range diff {
			got[r[0].(string)] = r[1].(string)
		}
		// What the engine computes (builtinVolatility): the more volatile of the
		// list's and the answer's, against the same of the list's and the server's,
		// which is what it computed from the whole of pg_proc.
		for name, v := range server {
			lv, _ := pgfunc.Builtin(name)
			if merged, whole := max(string(lv), got[name]), max(string(lv), v); merged != whole {
				t.Errorf("%s: %s: list %q and answer %q give %q, with the whole of pg_proc %q", when, name, lv, got[name], merged, whole)
			}
		}
		for name, v := range want {
			if got[name] != v {
				t.Errorf("%s: %s answered %q, want %q", when, name, got[name], v)
			}
		}
		t.Logf("%s: %d of %d names answered", when, len(got), len(server))
	}
	check("stock", nil)
	for _, ddl := range []string{
		`CREATE FUNCTION pg_catalog.sqlfence_made_here() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1'`,
		`ALTER FUNCTION pg_catalog.lower(text) VOLATILE`,
		`CREATE FUNCTION pg_catalog.upper(int) RETURNS int LANGUAGE sql VOLATILE AS 'SELECT 1'`,
		`ALTER FUNCTION pg_catalog.now() IMMUTABLE`,  // less volatile: the list's answer stands
		`ALTER FUNCTION pg_catalog.abs(int4) STABLE`, // immutable in the list
	} {
		if _, err := conn.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	check("after", map[string]string{"sqlfence_made_here": "s", "lower": "v", "upper": "v", "now": "", "abs": "s"})
}
