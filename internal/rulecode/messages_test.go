package rulecode_test

// TestMessages renders one message per rule code into testdata/messages.txt, so that
// a reviewer reads every message sqlfence gives in one file: for repetition, for
// claims that may be untrue in the situation (a valid claim is not "superseded"), and
// for the fix each offers. Refusals come from Policy.Plan; fences, unfenced writes and
// the driver's checks from statements run against PostgreSQL.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var update = flag.Bool("update", false, "rewrite testdata/messages.txt with the messages rendered")

// notRendered says, for each code the test does not produce, why: the file lists
// them, so a gap is visible rather than silent.
var notRendered = map[string]string{
	rulecode.UnknownShape:        "no statement the parser accepts reaches it today: a guard for shapes added to PostgreSQL's grammar",
	rulecode.PreparedChanged:     "needs the catalog to change between Prepare and Exec",
	rulecode.SessionSettings:     "needs a role or database default that changes how the server reads text",
	rulecode.OptionArgument:      "pgxfence's refusal of a query rewriter's output: pgxfence/options_test.go (TestRewriterOptions) produces it",
	rulecode.ServerVersion:       "needs a server older than PostgreSQL 17",
	rulecode.UnreadableRoutine:   "needs resolve: catalog and a routine in a language sqlfence cannot read",
	rulecode.CheckUnfencedWrite:  "sqlfence check's finding: internal/cli/check's tests and testdata hold its messages",
	rulecode.CheckOpaque:         "sqlfence check's finding: internal/cli/check's tests and testdata hold its messages",
	rulecode.CheckIgnoreNoWhy:    "sqlfence check's finding: internal/cli/check's tests and testdata hold its messages",
	rulecode.CheckUnusedIgnore:   "sqlfence check's finding: internal/cli/check's tests and testdata hold its messages",
	rulecode.PolicyNameAmbiguous: "needs the same table name in two schemas of the search path: catalog_policy_test.go in the root package produces it",
	rulecode.CatalogUnreadable:   "needs a role without access to pg_catalog: catalog_policy_test.go in the root package produces it",
	rulecode.CatalogChanged:      "needs DDL from another session between the decision and the write, with the guard installed: catalog_fresh_test.go produces it",
	rulecode.DynamicWrite:        "the Go analyzer's finding: contrib/analyzer's tests (testdata/src/app, // want comments) hold its messages",
	rulecode.BehindHistory:       "needs a server on an older timeline than one the connector used (a promotion): history_db_test.go in the root package produces it, the history taught synthetically",
	rulecode.OtherCluster:        "needs a second cluster: history_db_test.go in the root package produces it (TestConnectRefusesOtherCluster)",
	rulecode.GuardSettingMissing: "pgxfence.New's error on a pool without the guard's setting: pgxfence/open_test.go (TestNewWithoutGuardSetting) produces it",
	rulecode.HelperDatabase:      "needs a database that fails a helper's statement: claim's and outbox's tests produce it (a missing steps or outbox table)",
	rulecode.ReplicationRole:     "needs a session whose session_replication_role is not origin (a role default): catalog_replica_test.go in the root package produces it (TestGuardInReplicaSessions)",
	rulecode.ClaimLost:           "the claim helpers' error: claim/failover_test.go (TestFailoverAlarm) and claim/failover_cluster_test.go produce it",
	rulecode.NoSyncStandby:       "the claim helpers' error: claim/failover_test.go (TestRequireSynchronousStandby) produces it",
	rulecode.ClaimUnknown:        "the claim helpers' error: claim/failover_test.go (TestClaimOutcomeUnknown) produces it",
}

const policyYAML = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
  - name: staging
  - name: app.orders
    mode: repeatable
  - name: orders
functions: [billing.recalc]
claims: [{table: jobs}]
`

// planned are the refusals Policy.Plan gives without a database: situation, policy
// (nil: policyYAML), statement.
var planned = []struct{ situation, policy, query string }{
	{"TRUNCATE", "", `TRUNCATE inventory`},
	{"COPY FROM", "", `COPY inventory (sku, quantity) FROM STDIN`},
	{"the statement sets the epoch column", "", `UPDATE inventory SET quantity = 0, writer_epoch = 99`},
	{"INSERT without a column list", "", `INSERT INTO inventory VALUES ('z', 1, 99)`},
	{"WHERE CURRENT OF", "", `UPDATE inventory SET quantity = 0 WHERE CURRENT OF c`},
	{"several statements in one string", "", `SELECT 1; UPDATE inventory SET quantity = 0`},
	{"a parameter below $1", "", `UPDATE inventory SET quantity = $0`},
	{"a write where the fence cannot go", "", `COPY (DELETE FROM inventory RETURNING sku) TO STDOUT`},
	{"an unqualified name two entries match", "", `UPDATE orders SET x = 1`},
	{"a statement that does not parse", "", `UPDATE inventory SET`},
	{"? placeholders", "", `UPDATE inventory SET quantity = ?`},
	{"a statement over the size limit", "", `UPDATE inventory SET quantity = 1 WHERE sku = '` + strings.Repeat("x", 1<<20) + `'`},
	{"a statement nested too deep", "", `UPDATE inventory SET quantity = ` + strings.Repeat("1+", 5000) + `1`},
	{"DDL under ddl: deny", "", `CREATE TABLE t (a int)`},
	{"DDL on a protected table under ddl: allow", "allow", `ALTER TABLE inventory DROP COLUMN writer_epoch`},
	{"a function in a language sqlfence cannot read, under ddl: allow", "allow", `CREATE FUNCTION f() RETURNS void LANGUAGE c AS 'x', 'y'`},
	{"a role default, under ddl: allow", "allow", `ALTER ROLE app SET search_path = x`},
	{"a setting not on the harmless list", "", `SET session_replication_role = replica`},
	{"synchronous_commit turned off", "", `SET synchronous_commit = off`},
	{"synchronous_commit set to local through set_config", "", `SELECT set_config('synchronous_commit', 'local', true)`},
	{"SQL-level PREPARE", "", `PREPARE p AS UPDATE inventory SET quantity = 0`},
	{"COPY to a server file", "", `COPY inventory TO '/tmp/x'`},
	{"TRUNCATE … CASCADE", "", `TRUNCATE staging CASCADE`},
	{"a write to a system relation", "", `UPDATE pg_catalog.pg_class SET relname = 'x'`},
	{"a function the policy lists", "", `CALL billing.recalc()`},
	{"a function that runs SQL text", "", `SELECT query_to_xml('UPDATE inventory SET quantity = 0', true, true, '')`},
	{"a volatile built-in not on the list", "", `SELECT lo_import('/etc/passwd')`},
	{"a call sqlfence cannot judge", "", `SELECT app.unknown_fn()`},
	{"a DO block in a language sqlfence cannot read", "", `DO LANGUAGE plpython3u $$ plpy.execute("UPDATE inventory SET quantity = 0") $$`},
	{"a DO block with dynamic SQL", "", `DO $$ BEGIN EXECUTE 'UPDATE inventory SET quantity = 0'; END $$`},
	{"a DO block that writes a protected table", "", `DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$`},
	{"a statement that writes the claim table and a protected one", "", `WITH j AS (UPDATE jobs SET lease_epoch = 9 RETURNING id) UPDATE inventory SET quantity = 0`},
	{"the text carries the guard's marker", "", `/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = 0`},
}

type message struct{ code, situation, text string }

// helperCode reads the code in a claim helper's, the outbox's or the relay's error:
// "claim [SF614]: …".
var helperCode = regexp.MustCompile(`^(?:claim|outbox) \[(SF6\d\d)\]: `)

// helperMessages are the claim helpers', the outbox's and the relay's errors that
// need no database (claim/codes_test.go and outbox/codes_test.go produce them with
// one).
func helperMessages(t *testing.T) []message {
	var out []message
	add := func(situation string, err error) {
		t.Helper()
		m := helperCode.FindStringSubmatch(fmt.Sprint(err))
		if m == nil {
			t.Errorf("%s: %v, want a message starting with its code", situation, err)
			return
		}
		out = append(out, message{m[1], situation, err.Error()})
	}
	add("an operation on a lease that ended (the sentinel)", claim.ErrEnded)
	add("no job to claim (the sentinel)", claim.ErrNoJob)
	add("the job asked for is not claimable (the sentinel)", claim.ErrNotClaimable)
	add("the lease could not be renewed (the sentinel)", claim.ErrLeaseLost)
	_, err := claim.NewJobs(claim.JobsConfig{Lease: time.Second, RenewEvery: 2 * time.Second})
	add("RenewEvery not shorter than the lease", err)
	_, err = outbox.New("a.b.c")
	add("a bad outbox table name", err)
	add("an effect key that holds another message (the sentinel)", outbox.ErrKeyReused)
	h := &outbox.HTTP{URL: "http://127.0.0.1:1/{topic}"}
	add("the receiver does not answer", h.Send(context.Background(), outbox.Message{Key: "job:1:charge", Topic: "payments"}))
	return out
}

func code(err error) string {
	var e *sqlfence.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// tempPolicy matches a policy file in a test's temporary directory.
var tempPolicy = regexp.MustCompile(`/tmp/[^ ]*/sqlfence\.yaml`)

func TestMessages(t *testing.T) {
	var got []message
	add := func(situation string, err error) {
		t.Helper()
		if code(err) == "" {
			t.Errorf("%s: %v, want a *sqlfence.Error", situation, err)
			return
		}
		// A policy written to a temporary directory is named as the application's
		// would be, so the file does not change from run to run.
		text := tempPolicy.ReplaceAllString(err.Error(), "sqlfence.yaml")
		got = append(got, message{code(err), situation, text})
	}
	policies := map[string]*sqlfence.Policy{}
	for name, y := range map[string]string{"": policyYAML, "allow": "version: 1\ncatalog_refresh: 1h\ntables: [inventory]\nddl: allow\n"} {
		p, err := sqlfence.ParsePolicy([]byte(y), "sqlfence.yaml")
		if err != nil {
			t.Fatal(err)
		}
		policies[name] = p
	}
	for _, c := range planned {
		add(c.situation, policies[c.policy].Plan(c.query).Err)
	}
	got = append(got, ran(t, add)...)
	got = append(got, helperMessages(t)...)

	var b strings.Builder
	b.WriteString("# One message per rule code, as sqlfence renders it (go test ./internal/rulecode -update rewrites this file).\n")
	for _, info := range rulecode.All {
		n := 0
		for _, m := range got {
			if m.code == info.Code {
				fmt.Fprintf(&b, "\n%s %s — %s\n  %s\n", m.code, info.Kind, m.situation, m.text)
				n++
			}
		}
		if why, ok := notRendered[info.Code]; ok {
			if n > 0 {
				t.Errorf("%s is rendered; take it out of notRendered", info.Code)
			}
			fmt.Fprintf(&b, "\n%s %s — %s\n  (not rendered: %s)\n", info.Code, info.Kind, info.Title, why)
		} else if n == 0 {
			t.Errorf("no message rendered for %s (%s): add a case, or say in notRendered why not", info.Code, info.Title)
		}
	}
	const golden = "testdata/messages.txt"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the messages differ from %s (go test -update rewrites it; review the diff):\n%s", golden, b.String())
	}
}

// ran produces the messages that need a database: fences, unfenced writes, the
// claim discipline and the driver's argument checks.
func ran(t *testing.T, add func(string, error)) []message {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	jobs, err := claim.NewJobs(claim.JobsConfig{RenewEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, jobs.Schema()+`
		INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES;
		CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO inventory VALUES ('a', 10, 8589934597), ('b', 10, 0)`); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	open := func(y string, options ...string) *sql.DB {
		t.Helper()
		path := t.TempDir() + "/sqlfence.yaml"
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		params := "&sqlfence_policy=" + path
		for _, o := range options {
			params += "&options=" + strings.ReplaceAll(url.QueryEscape(o), "+", "%20") // pgx reads '+' as itself, as libpq does
		}
		c, err := sqlfence.OpenConnector(dsn+params, sqlfence.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open("version: 1\ncatalog_refresh: 1h\ntables: [inventory]\nclaims: [{table: jobs}]\n")
	allow := open("version: 1\ncatalog_refresh: 1h\ntables: [inventory]\nclaims: [{table: jobs}]\nunfenced: allow\n")
	const ship = `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`
	exec := func(db *sql.DB, ctx context.Context, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}

	add("a stale epoch (3) meets a row written at epoch 8589934597 (2<<32 + 5)", exec(db, sqlfence.WithEpoch(ctx, 3), ship))
	l1, err := jobs.Claim(ctx, db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Stop()
	add("a valid claim (epoch 4294967297, timeline 1) meets a row another job's claim wrote at epoch 8589934597", exec(db, l1.Context(), ship))
	l2, err := jobs.Claim(ctx, db, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Stop()
	if _, err := raw.ExecContext(ctx, `UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	l3, err := jobs.Claim(ctx, db, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Stop()
	add("a superseded claim writes a row", exec(db, context.WithoutCancel(l2.Context()), `UPDATE inventory SET quantity = 1 WHERE sku = 'b'`))
	pol, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\n"), "sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	add("the early check (CheckSuperseded) finds a newer epoch", sqlfence.CheckSuperseded(sqlfence.WithEpoch(ctx, 3), raw, pol, "inventory", "sku = $1", "a"))
	if err := exec(db, sqlfence.WithEpoch(ctx, 8589934599), ship); err != nil {
		t.Fatal(err)
	}
	add("strict mode: the same epoch writes the row again", exec(db, sqlfence.WithEpoch(ctx, 8589934599), ship))

	add("no epoch on the context", exec(db, ctx, ship))
	add("WithEpoch(ctx, -3)", exec(db, sqlfence.WithEpoch(ctx, -3), ship))
	add("sqlfence.Unfenced under unfenced: deny", exec(db, sqlfence.Unfenced(ctx, "repair INC-1"), ship))
	add("RawConn without unfenced: allow", rawConn(ctx, db))
	stmt, err := allow.PrepareContext(ctx, ship)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	_, err = stmt.ExecContext(sqlfence.Unfenced(ctx, "repair INC-1"))
	add("a prepared protected write under sqlfence.Unfenced", err)
	logs.Reset()
	if err := exec(allow, sqlfence.Unfenced(ctx, "repair INC-1"), ship); err != nil {
		t.Fatal(err)
	}
	if err := rawConn(sqlfence.Unfenced(ctx, "bulk load INC-2"), allow); err != nil {
		t.Fatal(err)
	}
	var logged []message
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		if m := regexp.MustCompile(`code=(SF\d+)`).FindStringSubmatch(line); m != nil {
			logged = append(logged, message{m[1], "logged under unfenced: allow (a log line, not an error)", line})
		}
	}

	add("a plain UPDATE of the claim table's status", exec(db, sqlfence.WithEpoch(ctx, 8), `UPDATE jobs SET status = 'claimed' WHERE id = 1`))
	add("WithClaim with a table name that does not parse", exec(db, sqlfence.WithClaim(ctx, sqlfence.Claim{Table: `"jobs`, Key: 1, Epoch: 8}), ship))
	add("a named argument", exec(db, sqlfence.WithEpoch(ctx, 8), `UPDATE inventory SET quantity = $1 WHERE sku = 'a'`, sql.Named("q", 1)))
	add("fewer arguments than parameters", exec(db, sqlfence.WithEpoch(ctx, 8), `UPDATE inventory SET quantity = $1 WHERE sku = $2`, 1))

	// What the catalog shows, under resolve: catalog.
	if _, err := raw.ExecContext(ctx, `
		CREATE VIEW stock_plain AS SELECT sku, quantity FROM inventory;
		CREATE TABLE parent (id int PRIMARY KEY);
		CREATE TABLE reservations (id int, parent_id int REFERENCES parent ON DELETE CASCADE, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE audit (sku text, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE FUNCTION reset_epoch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.writer_epoch := 0; RETURN NEW; END $$;
		CREATE TRIGGER reset_epoch BEFORE UPDATE ON audit FOR EACH ROW EXECUTE FUNCTION reset_epoch();
		CREATE TABLE notes (sku text);
		CREATE RULE zero AS ON INSERT TO notes DO ALSO UPDATE inventory SET quantity = 0`); err != nil {
		t.Fatal(err)
	}
	catalog := open("version: 1\nresolve: catalog\ncatalog_refresh: 1h\ntables: [inventory, reservations, audit]\n")
	add("a view of a protected table without the epoch column", exec(catalog, sqlfence.WithEpoch(ctx, 8), `UPDATE stock_plain SET quantity = 0 WHERE sku = 'a'`))
	add("a DELETE that cascades into a protected table", exec(catalog, sqlfence.WithEpoch(ctx, 8), `DELETE FROM parent WHERE id = 1`))
	add("a BEFORE trigger that sets the epoch column", exec(catalog, sqlfence.WithEpoch(ctx, 8), `UPDATE audit SET sku = 'x'`))
	add("a rule that writes a protected table", exec(catalog, sqlfence.WithEpoch(ctx, 8), `INSERT INTO notes (sku) VALUES ('x')`))
	typo := open("version: 1\ncatalog_refresh: 1h\ntables: [inventroy]\n")
	add("a policy table that the database does not have (a typo)", exec(typo, sqlfence.WithEpoch(ctx, 8), `SELECT 1`))
	if _, err := raw.ExecContext(ctx, `CREATE TABLE nocolumn (id int)`); err != nil {
		t.Fatal(err)
	}
	nocol := open("version: 1\ncatalog_refresh: 1h\ntables: [nocolumn]\n")
	add("a protected table without its epoch column", exec(nocol, sqlfence.WithEpoch(ctx, 8), `SELECT 1`))
	noversion := open("version: 1\ntables: [inventory]\n")
	add("a fenced write on a database without the catalog version (no guard installed)", exec(noversion, sqlfence.WithEpoch(ctx, 8), `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`))
	early := open("version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n", "-c synchronous_commit=off")
	add("a session started with options=-c synchronous_commit=off", exec(early, ctx, `SELECT 1`))
	return logged
}

func rawConn(ctx context.Context, db *sql.DB) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		_, err := sqlfence.RawConn(ctx, dc)
		return err
	})
}
