package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

func refusedWith(t *testing.T, what string, err error, code string) *sqlfence.Error {
	t.Helper()
	var e *sqlfence.Error
	if !errors.As(err, &e) || e.Code != code || !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("%s: %v, want ErrRefused %s", what, err, code)
	}
	return e
}

// TestSessionSynchronousCommit: a session whose synchronous_commit is off or local —
// from the startup parameters (a DSN's options=-c …), or a database default — is
// refused at connect with SF709, before any statement; remote_write and the default
// pass.
func TestSessionSynchronousCommit(t *testing.T) {
	dsn, raw := newRawDB(t, schema)
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	open := func(params map[string]string) (*sql.DB, *[]sqlfence.Event) {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range params {
			cfg.RuntimeParams[k] = v
		}
		var (
			mu     sync.Mutex
			events []sqlfence.Event
		)
		db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p, sqlfence.WithObserver(func(_ context.Context, e sqlfence.Event) {
			mu.Lock() // database/sql may connect on a goroutine of its own
			events = append(events, e)
			mu.Unlock()
		})))
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db, &events
	}
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string // "" passes, else what the refusal says
	}{
		{"options=-c synchronous_commit=off", map[string]string{"options": "-c synchronous_commit=off"}, "synchronous_commit is off"},
		{"startup parameter local", map[string]string{"synchronous_commit": "local"}, "synchronous_commit is local"},
		{"startup parameter OFF", map[string]string{"synchronous_commit": "OFF"}, "synchronous_commit is off"},
		{"startup parameter false", map[string]string{"synchronous_commit": "false"}, "synchronous_commit is off"},
		{"startup parameter remote_write", map[string]string{"synchronous_commit": "remote_write"}, ""},
		{"the server's default", nil, ""},
	} {
		db, events := open(c.params)
		_, err := db.ExecContext(ctx, `INSERT INTO staging (sku) VALUES ('x')`)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		e := refusedWith(t, c.name, err, rulecode.SessionCommit)
		if !strings.Contains(e.Error(), c.want) || !strings.Contains(e.Error(), "RESET synchronous_commit") {
			t.Errorf("%s: %v", c.name, e)
		}
		if len(*events) != 1 || (*events)[0].Outcome != sqlfence.OutcomeRefuse || (*events)[0].Code != rulecode.SessionCommit {
			t.Errorf("%s: the observer heard %+v", c.name, *events)
		}
	}
	if got := queryOne(t, ctx, raw, `SELECT count(*)::text FROM staging WHERE sku = 'x'`); got != "2" {
		t.Errorf("%s rows written, want 2 (the two sessions that passed)", got)
	}

	// A database default: every new session of it is refused, until it is reset.
	if _, err := raw.ExecContext(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$`); err != nil {
		t.Fatal(err)
	}
	db, _ := open(nil)
	_, err = db.ExecContext(ctx, `SELECT 1`)
	refusedWith(t, "a database default", err, rulecode.SessionCommit)
	if _, err := raw.ExecContext(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET synchronous_commit', current_database()); END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatalf("after ALTER DATABASE … RESET: %v", err)
	}
}

// TestSessionSynchronousCommitDSN: the registered driver's DSN keeps options=-c …
// as written when it takes the policy parameter out (pgx reads a '+' there as a plus
// sign, so the DSN is not re-encoded): an early-commit setting in it is refused, and
// a harmless one arrives.
func TestSessionSynchronousCommitDSN(t *testing.T) {
	dsn, _ := newRawDB(t, schema)
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		t.Skip("the test server's DSN is not a URL")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	open := func(options string) *sql.DB {
		db, err := sql.Open("sqlfence", withParam(withParam(dsn, "sqlfence_policy", "testdata/sqlfence.yaml"), "options", options))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	_, err := open("-c%20synchronous_commit%3Doff").ExecContext(ctx, `SELECT 1`)
	refusedWith(t, "options=-c synchronous_commit=off in the DSN", err, rulecode.SessionCommit)
	var name string
	if err := open("-c%20application_name%3Da+b").QueryRowContext(ctx, `SHOW application_name`).Scan(&name); err != nil || name != "a+b" {
		t.Fatalf("options=-c application_name=a+b arrived as %q (%v)", name, err)
	}
}

// TestSetSynchronousCommitOnServer: on a fenced connection every spelling that turns
// synchronous_commit off or to local is refused (SF417) and not sent — the session
// stays at on — while the durable values, DEFAULT and RESET run.
func TestSetSynchronousCommitOnServer(t *testing.T) {
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := f.fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	show := func() string {
		t.Helper()
		var v string
		if err := conn.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, q := range []string{
		`SET synchronous_commit = off`, `SET SESSION synchronous_commit TO 'OFF'`, `SET synchronous_commit = false`,
		`SET synchronous_commit = 0`, `SET synchronous_commit = no`, `SET synchronous_commit = 'LOCAL'`,
		`SELECT set_config('synchronous_commit', 'off', false)`, `SELECT set_config('Synchronous_Commit', 'local', false)`,
		`DO $$ BEGIN PERFORM set_config('synchronous_commit', 'off', false); END $$`,
	} {
		_, err := conn.ExecContext(ctx, q)
		refusedWith(t, q, err, rulecode.SynchronousCommit)
		if v := show(); v != "on" {
			t.Fatalf("%s: synchronous_commit is %s after the refusal", q, v)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`)
	refusedWith(t, "SET LOCAL in a transaction", err, rulecode.SynchronousCommit)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		`SET synchronous_commit = remote_apply`:                          "remote_apply",
		`SET synchronous_commit TO 'remote_write'`:                       "remote_write",
		`SET synchronous_commit = yes`:                                   "on",
		`SELECT set_config('synchronous_commit', 'remote_apply', false)`: "remote_apply",
		`SET synchronous_commit TO DEFAULT`:                              "on",
		`RESET synchronous_commit`:                                       "on",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if v := show(); v != want {
			t.Errorf("%s: synchronous_commit is %s, want %s", q, v, want)
		}
		if _, err := conn.ExecContext(ctx, `RESET synchronous_commit`); err != nil {
			t.Fatal(err)
		}
	}
}

func queryOne(t *testing.T, ctx context.Context, db *sql.DB, q string) string {
	t.Helper()
	var s string
	if err := db.QueryRowContext(ctx, q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}
