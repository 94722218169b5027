package sqlfence_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
)

const freshSchema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE events (id int, at int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (at);
CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (0) TO (100);
CREATE TABLE ledger (id int, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE notes (id int, body text);
CREATE TABLE parent (sku text PRIMARY KEY);
CREATE FUNCTION touch() RETURNS int LANGUAGE sql AS 'SELECT 1';
INSERT INTO parent VALUES ('a');
INSERT INTO inventory VALUES ('a', 10, 5);
INSERT INTO events VALUES (1, 1, 5);
INSERT INTO ledger VALUES (1, 5);
CREATE TABLE events_2 (LIKE events INCLUDING DEFAULTS);
INSERT INTO events_2 VALUES (2, 150, 5);`

const freshState = `SELECT (SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ') FROM inventory) || ' | ' ||
	(SELECT string_agg(id || ':' || writer_epoch, ' ' ORDER BY id) FROM events) || ' | ' ||
	(SELECT string_agg(id::text, ' ') FROM ledger)`

// freshFixture is a database with the guard (and so the catalog version) installed
// and a fenced pool that has read the catalog and fenced a write: warm.
func freshFixture(t *testing.T, policyText string) (db, raw *sql.DB, dsn string) {
	t.Helper()
	dsn, raw = newRawDB(t, freshSchema)
	path := writePolicy(t, policyText)
	var out, errOut bytes.Buffer
	if code := guard.Run([]string{"--policy", path, "--apply", "--dsn", dsn}, &out, &errOut); code != 0 {
		t.Fatalf("sqlfence guard --apply: %d\n%s%s", code, out.String(), errOut.String())
	}
	db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(4)
	if _, err := run(db, 6, "UPDATE inventory SET quantity = 11 WHERE sku = 'a'"); err != nil {
		t.Fatalf("warm: %v", err)
	}
	return db, raw, dsn
}

func run(db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, epoch int64, stmt string, args ...any) (sql.Result, error) {
	ctx := context.Background()
	if epoch > 0 {
		ctx = sqlfence.WithEpoch(ctx, epoch)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return db.ExecContext(ctx, stmt, args...)
}

func rawExec(t *testing.T, raw *sql.DB, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := raw.ExecContext(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func stateOf(t *testing.T, raw *sql.DB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var s string
	if err := raw.QueryRowContext(ctx, freshState).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func code(err error) string {
	var e *sqlfence.Error
	if errors.As(err, &e) {
		return e.Code
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState()
	}
	return ""
}

// staleTry is one statement run after another session's DDL, and the codes it may
// fail with (nil: it succeeds).
type staleTry struct {
	epoch int64
	stmt  string
	codes []string
}

// staleCase is one class of DDL the snapshot judges, made by another session while a
// fenced pool is warm: the statements then run, and the state after.
type staleCase struct {
	name  string
	ddl   string
	tries []staleTry
	want  string // the state after
}

// staleCases are TestCatalogNeverStale's cases, which TestCatalogRefreshNeverStale
// runs under catalog_refresh too.
func staleCases() []staleCase {
	type try = staleTry
	return []staleCase{
		{"trigger on an unprotected table writes a protected one",
			`CREATE FUNCTION restock() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END$$;
			 CREATE TRIGGER notes_restock AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION restock();`,
			[]try{{0, "INSERT INTO notes VALUES (1, 'x')", []string{"SF001"}},
				{3, "INSERT INTO notes VALUES (1, 'x')", []string{"SF502"}},
				{9, "INSERT INTO notes VALUES (1, 'x')", []string{"SF502"}}},
			"a:11:6 | 1:5 | 1"},
		{"BEFORE trigger on the protected table sets the epoch",
			`CREATE FUNCTION lift() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.writer_epoch := 1000; RETURN NEW; END$$;
			 CREATE TRIGGER zz_lift BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION lift();`,
			[]try{{9, "UPDATE inventory SET quantity = 1 WHERE sku = 'a'", []string{"SF525"}},
				{3, "UPDATE inventory SET quantity = 2 WHERE sku = 'a'", []string{"SF502"}},
				{0, "UPDATE inventory SET quantity = 3 WHERE sku = 'a'", []string{"SF502", "SF201"}},
				{9, "UPDATE inventory SET quantity = 4 WHERE sku = 'a'", []string{"SF502"}}},
			"a:11:6 | 1:5 | 1"},
		{"rule on the protected table",
			`CREATE RULE purge AS ON UPDATE TO inventory DO ALSO DELETE FROM ledger`,
			// An UPDATE's ALSO rule runs before it: the guard refuses the rule's write first.
			[]try{{9, "UPDATE inventory SET quantity = 1 WHERE sku = 'a'", []string{"SF525", "SF001"}},
				{9, "UPDATE inventory SET quantity = 1 WHERE sku = 'a'", []string{"SF503"}}},
			"a:11:6 | 1:5 | 1"},
		{"partition attached",
			`ALTER TABLE events ATTACH PARTITION events_2 FOR VALUES FROM (100) TO (200)`,
			[]try{{0, "UPDATE events_2 SET id = 20", []string{"SF001", "SF201"}},
				{3, "UPDATE events_2 SET id = 30", []string{"SF101"}},
				{9, "UPDATE events_2 SET id = 2", nil}},
			"a:11:6 | 1:5 2:9 | 1"},
		{"view over the protected table",
			`CREATE VIEW inv_v AS SELECT * FROM inventory`,
			[]try{{0, "UPDATE inv_v SET quantity = 0", []string{"SF001", "SF201"}},
				{3, "UPDATE inv_v SET quantity = 0", []string{"SF101"}},
				{9, "UPDATE inv_v SET quantity = 12", nil}},
			"a:12:9 | 1:5 | 1"},
		{"cascading foreign key",
			`ALTER TABLE inventory ADD CONSTRAINT inv_parent FOREIGN KEY (sku) REFERENCES parent ON DELETE CASCADE`,
			[]try{{0, "DELETE FROM parent", []string{"SF001"}},
				{9, "DELETE FROM parent", []string{"SF501"}}},
			"a:11:6 | 1:5 | 1"},
		{"function body replaced",
			`CREATE OR REPLACE FUNCTION touch() RETURNS int LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END$$`,
			[]try{{0, "SELECT touch()", []string{"SF001"}},
				{9, "SELECT touch()", []string{"SF416"}}},
			"a:11:6 | 1:5 | 1"},
		{"epoch column dropped",
			`ALTER TABLE ledger DROP COLUMN writer_epoch CASCADE`, /* and the guard's row trigger on it */
			[]try{{9, "UPDATE ledger SET id = 2", []string{"42703", "SF525"}},
				{9, "SELECT 1", []string{"SF521"}}},
			"a:11:6 | 1:5 | 1"},
	}
}

// TestCatalogNeverStale: DDL made from a second, plain connection while the fenced
// pool is warm — each class the snapshot judges — reaches every fenced statement
// after it: no statement without an epoch or with a stale one changes a protected
// row, whatever the snapshot said; the first statement the change affects fails
// (the guard: SF005 for a fenced one, retryable as SF525; SF001 for one the old
// snapshot let through), and the statements after it are decided on the new catalog.
func TestCatalogNeverStale(t *testing.T) {
	t.Parallel()
	const policy = "version: 1\ntables: [inventory, events, ledger]\n"
	cases := staleCases()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, raw, _ := freshFixture(t, policy)
			// A statement prepared before the DDL, and an open transaction.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := db.PrepareContext(ctx, "UPDATE inventory SET quantity = quantity WHERE sku = $1")
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rawExec(t, raw, c.ddl)
			for i, tr := range c.tries {
				_, err := run(db, tr.epoch, tr.stmt)
				got := code(err)
				switch {
				case tr.codes == nil && err != nil:
					t.Errorf("try %d (epoch %d) %s: %v, want it to run", i, tr.epoch, tr.stmt, err)
				case tr.codes != nil && !contains(tr.codes, got):
					t.Errorf("try %d (epoch %d) %s: %v (code %q), want one of %v", i, tr.epoch, tr.stmt, err, got, tr.codes)
				}
			}
			if got := stateOf(t, raw); got != c.want {
				t.Errorf("state %q, want %q", got, c.want)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCatalogStalePreparedAndTx: a statement prepared before another session's DDL
// is decided again and prepared again (its marker carries the old version, which the
// guard refuses); in an open transaction the fenced write fails with the retryable
// SF525, and the retried transaction runs on the new catalog.
func TestCatalogStalePreparedAndTx(t *testing.T) {
	t.Parallel()
	db, raw, _ := freshFixture(t, "version: 1\ntables: [inventory, events, ledger]\n")
	ctx, cancel := context.WithTimeout(sqlfence.WithEpoch(context.Background(), 9), 30*time.Second)
	defer cancel()
	st, err := db.PrepareContext(ctx, "UPDATE inventory SET quantity = quantity + 1 WHERE sku = $1")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE ledger SET id = 1"); err != nil {
		t.Fatal(err)
	}
	rawExec(t, raw, "CREATE VIEW inv_v AS SELECT * FROM inventory")
	_, err = tx.ExecContext(ctx, "UPDATE ledger SET id = 1")
	if code(err) != "SF525" || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("in the open transaction: %v, want SF525 saying to retry", err)
	}
	tx.Rollback()
	// Prepared before the DDL: decided and prepared again (its first run may meet the
	// guard first, on a connection that had not heard yet).
	var ran bool
	for range 3 {
		if _, err := st.ExecContext(ctx, "a"); err == nil {
			ran = true
			break
		} else if code(err) != "SF525" {
			t.Fatalf("prepared: %v", err)
		}
	}
	if !ran {
		t.Fatal("the prepared statement never ran on the new catalog")
	}
	if got := stateOf(t, raw); got != "a:12:9 | 1:5 | 1" {
		t.Fatalf("state %q", got)
	}
}

// TestCatalogVersionMissing: without the catalog version (no guard installed) a
// fenced write is refused with the install command, unless the policy sets
// catalog_refresh, whose period then bounds how long another session's DDL goes
// unseen.
func TestCatalogVersionMissing(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, freshSchema)
	db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", writePolicy(t, "version: 1\ntables: [inventory]\n")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = run(db, 9, "UPDATE inventory SET quantity = 1 WHERE sku = 'a'")
	if code(err) != "SF524" || !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), "sqlfence guard --policy") || !strings.Contains(err.Error(), "catalog_refresh") {
		t.Fatalf("no catalog version: %v, want SF524 with the install command and catalog_refresh", err)
	}
	if _, err := run(db, 0, "SELECT 1"); err != nil {
		t.Fatalf("a read: %v", err)
	}

	refresh, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", writePolicy(t, "version: 1\ntables: [inventory]\ncatalog_refresh: 200ms\n")))
	if err != nil {
		t.Fatal(err)
	}
	defer refresh.Close()
	if _, err := run(refresh, 9, "UPDATE inventory SET quantity = 1 WHERE sku = 'a'"); err != nil {
		t.Fatal(err)
	}
	rawExec(t, raw, `CREATE FUNCTION lift() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.writer_epoch := 1000; RETURN NEW; END$$;
		CREATE TRIGGER zz_lift BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION lift();`)
	time.Sleep(300 * time.Millisecond) // past the period
	if _, err := run(refresh, 10, "UPDATE inventory SET quantity = 2 WHERE sku = 'a'"); code(err) != "SF502" {
		t.Fatalf("after the period: %v, want the new trigger's SF502", err)
	}
}

// TestCatalogNewTableSameName: a table created by another session under a protected
// unqualified name, in a schema ahead on the search path: the guard's event trigger
// guards it at once, the first fenced write to it meets the guard as stale, and the
// connector then finds the name ambiguous and refuses every statement (SF522).
func TestCatalogNewTableSameName(t *testing.T) {
	t.Parallel()
	const policy = "version: 1\ntables: [inventory, events, ledger]\n"
	_, raw, dsn := freshFixture(t, policy)
	rawExec(t, raw, "CREATE SCHEMA app")
	db, err := sql.Open("sqlfence", withParam(withParam(dsn, "search_path", "app,public"), "sqlfence_policy", writePolicy(t, policy)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := run(db, 7, "UPDATE inventory SET quantity = 12 WHERE sku = 'a'"); err != nil {
		t.Fatalf("warm: %v", err)
	}
	rawExec(t, raw, `CREATE TABLE app.inventory AS SELECT 'a'::text AS sku, 10 AS quantity, 5::bigint AS writer_epoch;
		ALTER TABLE app.inventory ALTER writer_epoch SET NOT NULL, ALTER writer_epoch SET DEFAULT 0, ADD PRIMARY KEY (sku);`)
	for i, tr := range []struct {
		epoch int64
		codes []string
	}{{3, []string{"SF525"}}, {0, []string{"SF522"}}, {9, []string{"SF522"}}} {
		_, err := run(db, tr.epoch, "UPDATE inventory SET quantity = 0 WHERE sku = 'a'")
		if !contains(tr.codes, code(err)) {
			t.Errorf("try %d (epoch %d): %v, want one of %v", i, tr.epoch, err, tr.codes)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var app, pub string
	if err := raw.QueryRowContext(ctx, `SELECT (SELECT quantity || ':' || writer_epoch FROM app.inventory), (SELECT quantity || ':' || writer_epoch FROM public.inventory)`).Scan(&app, &pub); err != nil {
		t.Fatal(err)
	}
	if app != "10:5" || pub != "12:7" {
		t.Fatalf("app.inventory %s, public.inventory %s; want 10:5 and 12:7", app, pub)
	}
}
