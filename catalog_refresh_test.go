package sqlfence_test

import (
	"bytes"
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// TestCatalogFingerprintMoves: every kind of DDL the catalog tests cover, made by
// another session and committed, moves the fingerprint catalog_refresh compares
// (read on a session of its own, as on an application's idle connection); the same
// DDL rolled back does not, nor do writes to tables, ANALYZE or a sequence's nextval.
func TestCatalogFingerprintMoves(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, freshSchema+`;
		CREATE TABLE lots (id int PRIMARY KEY, sku text);
		CREATE SEQUENCE s;`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reader, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	conn, err := reader.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() string {
		t.Helper()
		fp, err := pgcatalog.Fingerprint(ctx, queryFunc(conn))
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	var dbname string
	if err := raw.QueryRowContext(ctx, "SELECT current_database()").Scan(&dbname); err != nil {
		t.Fatal(err)
	}
	ddl := []string{
		// Triggers (created, disabled, dropped) and their functions.
		`CREATE FUNCTION restock() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END$$`,
		`CREATE TRIGGER notes_restock AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION restock()`,
		`ALTER TABLE notes DISABLE TRIGGER notes_restock`,
		`DROP TRIGGER notes_restock ON notes`,
		// Rules.
		`CREATE RULE purge AS ON UPDATE TO inventory DO ALSO DELETE FROM ledger`,
		`ALTER TABLE inventory DISABLE RULE purge`,
		`DROP RULE purge ON inventory`,
		// Partitions and inheritance.
		`ALTER TABLE events ATTACH PARTITION events_2 FOR VALUES FROM (100) TO (200)`,
		`ALTER TABLE events DETACH PARTITION events_2`,
		`CREATE TABLE ledger_child () INHERITS (ledger)`,
		`ALTER TABLE ledger_child NO INHERIT ledger`,
		// Views, materialized views and their indexes.
		`CREATE VIEW inv_v AS SELECT * FROM inventory`,
		`CREATE OR REPLACE VIEW inv_v AS SELECT * FROM inventory WHERE quantity > 0`,
		`CREATE MATERIALIZED VIEW inv_m AS SELECT sku, touch() AS t FROM inventory`,
		`CREATE INDEX inv_m_t ON inv_m ((t + 1))`,
		// Foreign keys and their actions.
		`ALTER TABLE inventory ADD CONSTRAINT inv_parent FOREIGN KEY (sku) REFERENCES parent ON DELETE CASCADE`,
		`ALTER TABLE inventory DROP CONSTRAINT inv_parent`,
		// Functions: body replaced, volatility, settings, renamed, aggregates, operators.
		`CREATE OR REPLACE FUNCTION touch() RETURNS int LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END$$`,
		`ALTER FUNCTION touch() STABLE`,
		`ALTER FUNCTION touch() SET search_path = public`,
		`ALTER FUNCTION touch() RENAME TO touch2`,
		`CREATE AGGREGATE total (int) (SFUNC = int4pl, STYPE = int)`,
		`CREATE FUNCTION plus(int, int) RETURNS int LANGUAGE sql AS 'SELECT $1 + $2'`,
		`CREATE OPERATOR === (LEFTARG = int, RIGHTARG = int, FUNCTION = plus)`,
		// The epoch column: renamed, retyped, made nullable, dropped.
		`ALTER TABLE ledger RENAME COLUMN writer_epoch TO we`,
		`ALTER TABLE ledger RENAME COLUMN we TO writer_epoch`,
		`ALTER TABLE ledger ALTER COLUMN writer_epoch DROP NOT NULL`,
		`ALTER TABLE ledger ALTER COLUMN writer_epoch TYPE numeric`,
		`ALTER TABLE ledger DROP COLUMN writer_epoch`,
		// Names: a schema on the search path, a table of a protected name in it, renames.
		`CREATE SCHEMA app`,
		`CREATE TABLE app.inventory (sku text, writer_epoch bigint NOT NULL)`,
		`ALTER TABLE app.inventory RENAME TO inventory2`,
		`ALTER TABLE app.inventory2 SET SCHEMA public`,
		`ALTER DATABASE "` + dbname + `" SET search_path = app, public`,
		`ALTER DATABASE "` + dbname + `" RESET search_path`,
		// Types a definition names, extensions, privileges, comments on nothing read.
		`CREATE DOMAIN epoch AS bigint`,
		`ALTER DOMAIN epoch RENAME TO epoch2`,
		// What the server runs for a statement unnamed (catalog_bound.go): defaults,
		// constraints, domains' checks, casts, policies, trigger conditions.
		`CREATE TABLE marks (id int, body text)`,
		`ALTER TABLE marks ALTER COLUMN body SET DEFAULT touch2()::text`,
		`ALTER TABLE marks ADD CONSTRAINT marks_ok CHECK (touch2() > 0) NOT VALID`,
		`ALTER DOMAIN epoch2 ADD CONSTRAINT epoch_ok CHECK (touch2() > 0) NOT VALID`,
		`CREATE TYPE boxed AS (a int)`,
		`CREATE FUNCTION to_boxed(int) RETURNS boxed LANGUAGE sql AS 'SELECT ROW($1)::boxed'`,
		`CREATE CAST (int AS boxed) WITH FUNCTION to_boxed(int)`,
		`CREATE POLICY marks_p ON marks USING (touch2() > 0)`,
		`CREATE TRIGGER marks_when BEFORE INSERT ON marks FOR EACH ROW WHEN (touch2() > 0) EXECUTE FUNCTION restock()`,
		`CREATE EXTENSION IF NOT EXISTS plpgsql`, // present: a no-op, which must not move it
		`GRANT SELECT ON inventory TO PUBLIC`,
	}
	noops := map[string]bool{`CREATE EXTENSION IF NOT EXISTS plpgsql`: true}
	for _, stmt := range ddl {
		before := read()
		// Rolled back: nothing visible changed.
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if got := read(); got != before {
			t.Errorf("%s, uncommitted in another session: the fingerprint moved", stmt)
		}
		tx.Rollback()
		if got := read(); got != before {
			t.Errorf("%s, rolled back: the fingerprint moved", stmt)
		}
		rawExec(t, raw, stmt)
		if got := read(); got == before && !noops[stmt] {
			t.Errorf("%s, committed in another session: the fingerprint did not move", stmt)
		} else if got != before && noops[stmt] {
			t.Errorf("%s (a no-op): the fingerprint moved", stmt)
		}
	}
	// What is not DDL leaves it where it was.
	before := read()
	for _, stmt := range []string{
		`INSERT INTO notes VALUES (1, 'x')`, `UPDATE inventory SET quantity = 3`, `DELETE FROM notes`,
		`ANALYZE inventory`, `VACUUM notes`, `SELECT nextval('s')`,
	} {
		rawExec(t, raw, stmt)
		if got := read(); got != before {
			t.Errorf("%s: the fingerprint moved", stmt)
		}
	}
}

// TestCatalogRefreshKeepsDecisions: under catalog_refresh, a period that finds the
// catalog unchanged keeps the decisions (no statement is decided again); DDL that
// changes nothing the snapshot reads (a table without an epoch column) keeps them
// too; DDL that does (a trigger writing a protected table) is seen after the period,
// and its statements are decided again on the new catalog.
func TestCatalogRefreshKeepsDecisions(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, freshSchema)
	connector, err := sqlfence.Driver{}.OpenConnector(withParam(dsn, "sqlfence_policy",
		writePolicy(t, "version: 1\nmode: repeatable\ntables: [inventory]\ncatalog_refresh: 100ms\n")))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(2)
	stmts := []string{
		"UPDATE inventory SET quantity = 1 WHERE sku = 'a'",
		"INSERT INTO notes VALUES (1, 'x')",
		"SELECT touch()",
		"UPDATE ledger SET id = 1",
	}
	pass := func() {
		t.Helper()
		for _, s := range stmts {
			if _, err := run(db, 9, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	stats := func() sqlfence.CacheStats {
		st, ok := sqlfence.CacheStatsOf(connector)
		if !ok {
			t.Fatal("not a sqlfence connector")
		}
		return st
	}
	pass()
	first := stats()
	for _, ddl := range []string{"", "CREATE TABLE unrelated (x int)", "CREATE TEMP TABLE scratch (x int)"} {
		if ddl != "" {
			rawExec(t, raw, ddl)
		}
		for range 3 {
			time.Sleep(150 * time.Millisecond) // past the period
			pass()
		}
		if st := stats(); st.Misses != first.Misses || st.Entries != first.Entries {
			t.Errorf("after %q and three periods: %d misses, %d entries; want the %d and %d of the first pass (decisions kept)",
				ddl, st.Misses, st.Entries, first.Misses, first.Entries)
		}
	}
	rawExec(t, raw, `CREATE FUNCTION restock() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END$$;
		CREATE TRIGGER notes_restock AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION restock();`)
	time.Sleep(150 * time.Millisecond)
	if _, err := run(db, 9, "INSERT INTO notes VALUES (1, 'x')"); code(err) != "SF502" {
		t.Fatalf("after the trigger and the period: %v, want SF502", err)
	}
	if _, err := run(db, 9, stmts[0]); err != nil {
		t.Fatal(err)
	}
	if st := stats(); st.Misses <= first.Misses {
		t.Errorf("after the trigger: %d misses, want more than %d (decided again on the new catalog)", st.Misses, first.Misses)
	}
}

// TestCatalogRefreshNeverStale: TestCatalogNeverStale's cases under catalog_refresh,
// where the guard is installed without its event triggers (a role that is not a
// superuser: no catalog version). After the period every statement is decided on the
// new catalog, so each try fails as TestCatalogNeverStale's do once the connector
// has caught up: the codes only the guard gives (SF001, the stale version's SF525,
// the undefined column) become the driver's refusal of the later tries.
func TestCatalogRefreshNeverStale(t *testing.T) {
	t.Parallel()
	const policy = "version: 1\ntables: [inventory, events, ledger]\ncatalog_refresh: 200ms\n"
	guardOnly := []string{"SF001", "SF525", "42703"}
	for _, c := range staleCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn, raw := newRawDB(t, freshSchema)
			path := writePolicy(t, policy)
			var out, errOut bytes.Buffer
			if code := guard.Run([]string{"--policy", path, "--apply", "--dsn", dsn}, &out, &errOut); code != 0 {
				t.Fatalf("sqlfence guard --apply: %d\n%s%s", code, out.String(), errOut.String())
			}
			rawExec(t, raw, "DROP EVENT TRIGGER sqlfence_catalog_ddl; DROP EVENT TRIGGER sqlfence_catalog_drop")
			db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", path))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(4)
			if _, err := run(db, 6, "UPDATE inventory SET quantity = 11 WHERE sku = 'a'"); err != nil {
				t.Fatalf("warm: %v", err)
			}
			time.Sleep(250 * time.Millisecond) // a refresh that keeps the snapshot
			if _, err := run(db, 0, "SELECT 1"); err != nil {
				t.Fatalf("warm: %v", err)
			}
			rawExec(t, raw, c.ddl)
			time.Sleep(300 * time.Millisecond) // past the period
			last := c.tries[len(c.tries)-1].codes
			for i, tr := range c.tries {
				var want []string
				for _, code := range tr.codes {
					if !slices.Contains(guardOnly, code) {
						want = append(want, code)
					}
				}
				if tr.codes != nil && want == nil {
					want = last
				}
				_, err := run(db, tr.epoch, tr.stmt)
				got := code(err)
				switch {
				case want == nil && err != nil:
					t.Errorf("try %d (epoch %d) %s: %v, want it to run", i, tr.epoch, tr.stmt, err)
				case want != nil && !slices.Contains(want, got):
					t.Errorf("try %d (epoch %d) %s: %v (code %q), want one of %v", i, tr.epoch, tr.stmt, err, got, want)
				}
			}
			if got := stateOf(t, raw); got != c.want {
				t.Errorf("state %q, want %q", got, c.want)
			}
		})
	}
}
