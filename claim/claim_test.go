package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// markedDB is the arbiter as the tests hand it to the helpers. It fails the
// test on any statement whose context lacks the claim mark — the mark that
// sqlfence's claim discipline lets through to a claim table's epoch and status
// columns — and records every statement text it saw.
type markedDB struct {
	claim.DB
	t    testing.TB
	mu   sync.Mutex
	seen map[string]bool
}

func mark(t testing.TB, db claim.DB) *markedDB {
	return &markedDB{DB: db, t: t, seen: map[string]bool{}}
}

func (m *markedDB) note(ctx context.Context, query string) {
	if !claimctx.From(ctx) {
		m.t.Errorf("claim helper statement without the claim mark: %s", query)
	}
	m.mu.Lock()
	m.seen[query] = true
	m.mu.Unlock()
}

func (m *markedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	m.note(ctx, query)
	return m.DB.ExecContext(ctx, query, args...)
}

func (m *markedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	m.note(ctx, query)
	return m.DB.QueryRowContext(ctx, query, args...)
}

func (m *markedDB) statements() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for s := range m.seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// env is one test database: the raw pgx handle (the arbiter, and the test's
// window on the data), the same database through sqlfence protecting
// inventory, and the raw handle wrapped to check the claim mark.
type env struct {
	dsn    string
	raw    *sql.DB
	fenced *sql.DB
	db     *markedDB
}

const inventoryDDL = `
CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0
);
INSERT INTO inventory (sku, quantity) VALUES ('a', 100), ('b', 100);
`

// testPolicy protects inventory and declares the helpers' default tables as
// claim tables, so that sqlfence refuses any other write to their status and
// epoch columns.
const testPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
claims:
  - table: jobs
  - table: sqlfence_claims
`

func newEnv(t testing.TB, ddl ...string) *env {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, s := range append([]string{inventoryDDL}, ddl...) {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
	pol, err := sqlfence.ParsePolicy([]byte(existingClaims(t, raw, testPolicy)), "claim_test")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fenced := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	t.Cleanup(func() { fenced.Close() })
	return &env{dsn: dsn, raw: raw, fenced: fenced, db: mark(t, raw)}
}

func (e *env) query(t testing.TB, q string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := e.raw.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

func (e *env) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if _, err := e.raw.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func newJobs(t testing.TB, cfg claim.JobsConfig) *claim.Jobs {
	t.Helper()
	j, err := claim.NewJobs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func newLedger(t testing.TB, cfg claim.LedgerConfig) *claim.Ledger {
	t.Helper()
	l, err := claim.NewLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fencedErr asserts err matches sqlfence.ErrFenced and returns its details.
func fencedErr(t testing.TB, what string, err error) *sqlfence.Error {
	t.Helper()
	var fe *sqlfence.Error
	if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) {
		t.Fatalf("%s: err = %v, want a *sqlfence.Error matching ErrFenced", what, err)
	}
	return fe
}

var update = flag.Bool("update", false, "rewrite testdata/statements.golden")

// TestStatementShapes pins the exact statements the helpers send for the
// default configurations: the list sqlfence's claim discipline admits, and
// what a reviewer reads to know what a claim does. Every one carried the
// claim mark (markedDB checks).
func TestStatementShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var all []string
	for _, c := range []struct {
		name   string
		jobs   *claim.JobsConfig
		ledger *claim.LedgerConfig
	}{
		{name: "jobs, GlobalEpoch", jobs: &claim.JobsConfig{}},
		{name: "jobs, PerJobEpoch", jobs: &claim.JobsConfig{Epochs: claim.PerJobEpoch}},
		{name: "claim table, GlobalEpoch", ledger: &claim.LedgerConfig{}},
		{name: "claim table, PerJobEpoch", ledger: &claim.LedgerConfig{Epochs: claim.PerJobEpoch}},
		{name: "jobs, CounterEpoch", jobs: &claim.JobsConfig{Epochs: claim.CounterEpoch}},
		{name: "claim table, CounterEpoch", ledger: &claim.LedgerConfig{Epochs: claim.CounterEpoch}},
	} {
		e := newEnv(t)
		if c.jobs != nil {
			c.jobs.RenewEvery = -1
			j := newJobs(t, *c.jobs)
			e.exec(t, j.Schema())
			e.exec(t, `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
			l1, err := j.ClaimNext(ctx, e.db)
			if err != nil {
				t.Fatal(err)
			}
			if err := l1.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l1.Release(ctx, 0); err != nil {
				t.Fatal(err)
			}
			l2, err := j.Claim(ctx, e.db, l1.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if err := l2.Complete(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := j.Claim(ctx, e.db, l1.JobID); !errors.Is(err, claim.ErrDone) { // the inspection after a refusal
				t.Fatalf("claiming a done job: %v", err)
			}
		} else {
			lg := newLedger(t, *c.ledger)
			e.exec(t, lg.Schema())
			l1, err := lg.Claim(ctx, e.db, "m1")
			if err != nil {
				t.Fatal(err)
			}
			if err := l1.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l1.Release(ctx, 0); err != nil {
				t.Fatal(err)
			}
			l2, err := lg.Claim(ctx, e.db, "m1")
			if err != nil {
				t.Fatal(err)
			}
			if err := l2.Complete(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := lg.Claim(ctx, e.db, "m1"); !errors.Is(err, claim.ErrDone) {
				t.Fatalf("claiming a done job: %v", err)
			}
		}
		all = append(all, "-- "+c.name)
		all = append(all, e.db.statements()...)
		all = append(all, "")
	}
	got := strings.Join(all, "\n")
	golden := filepath.Join("testdata", "statements.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./claim -run StatementShapes -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("the helpers' statements changed; if that is intended, run go test ./claim -run StatementShapes -update and tell sqlfence's claim discipline.\ngot:\n%s", got)
	}
}

// TestThroughSqlfence: the arbiter may be the database through sqlfence. The
// policy declares the jobs table and the claim table as claim tables; every
// helper statement passes the claim discipline, and the same status write
// without the helpers is refused.
func TestThroughSqlfence(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: 10 * time.Millisecond})
	lg := newLedger(t, claim.LedgerConfig{RenewEvery: 10 * time.Millisecond})
	e := newEnv(t, j.Schema(), lg.Schema())
	db := mark(t, e.fenced)
	ctx := context.Background()
	if _, err := e.fenced.ExecContext(ctx, `INSERT INTO jobs DEFAULT VALUES`); err != nil {
		t.Fatalf("enqueueing through sqlfence: %v", err)
	}
	l, err := j.ClaimNext(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// The handler's context carries the epoch, never the claim mark: a
	// handler cannot write the claim columns.
	if claimctx.From(l.Context()) {
		t.Fatal("the handler's context carries the claim mark")
	}
	if _, err := e.fenced.ExecContext(l.Context(), `UPDATE jobs SET status = 'done'`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("status write from the handler: err = %v, want ErrRefused", err)
	}
	time.Sleep(30 * time.Millisecond) // the keeper renews through sqlfence
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if l, err = j.Claim(ctx, db, l.JobID); err != nil {
		t.Fatal(err)
	}
	if err := l.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Claim(ctx, db, l.JobID); !errors.Is(err, claim.ErrDone) {
		t.Fatalf("claiming a done job: err = %v", err)
	}
	m, err := lg.Claim(ctx, db, "m1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if err := m.Release(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if m, err = lg.Claim(ctx, db, "m1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if context.Cause(l.Context()) != claim.ErrEnded || context.Cause(m.Context()) != claim.ErrEnded {
		t.Fatalf("causes %v, %v; want ErrEnded: a renewal was refused", context.Cause(l.Context()), context.Cause(m.Context()))
	}
	// A claim path that bypasses the helpers does not exist.
	for _, stmt := range []string{
		`UPDATE jobs SET status = 'pending' WHERE id = 1`,
		`UPDATE jobs SET status = 'claimed', lease_expires_at = now() + interval '1 minute' WHERE status = 'pending'`,
		`INSERT INTO sqlfence_claims (job_id, lease_epoch, status, lease_expires_at) VALUES ('m2', 1, 'claimed', now())`,
	} {
		if _, err := e.fenced.ExecContext(ctx, stmt); !errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%s: err = %v, want ErrRefused", stmt, err)
		}
	}
}

// existingClaims is policy without the claim tables this test's database does not
// have: under resolve: catalog a claim table the database lacks stops every statement
// (SF520), and each test creates only the claim table its helper uses.
func existingClaims(t testing.TB, raw *sql.DB, policy string) string {
	t.Helper()
	for _, name := range []string{"jobs", "sqlfence_claims"} {
		var ok bool
		if err := raw.QueryRow("SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if !ok {
			policy = strings.Replace(policy, "  - table: "+name+"\n", "", 1)
		}
	}
	return strings.TrimSuffix(policy, "claims:\n")
}
