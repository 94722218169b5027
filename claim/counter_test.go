package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/claim"
)

// simulatedEngine is a real PostgreSQL that answers the claim helpers'
// server probe as a distributed engine would: none of them is installable
// here. Every other statement runs unchanged.
type simulatedEngine struct {
	claim.DB
	version string
	citus   bool
}

func (s simulatedEngine) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if strings.HasPrefix(q, "SELECT pg_catalog.version(), EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus')") {
		return s.DB.QueryRowContext(ctx, "SELECT $1::text, $2::bool", s.version, s.citus)
	}
	return s.DB.QueryRowContext(ctx, q, args...)
}

// Version strings as these engines report them.
var distributedEngines = []struct {
	name    string
	version string
	citus   bool
}{
	{"CockroachDB", "CockroachDB CCL v24.1.0 (x86_64-pc-linux-gnu, built 2024/05/15 13:51:23, go1.22.2 X:nocoverageredesign)", false},
	{"YugabyteDB", "PostgreSQL 11.2-YB-2.20.2.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 16.0.6, 64-bit", false},
	{"Citus", "PostgreSQL 16.2 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 12.2.0, 64-bit", true},
}

// TestDistributedEngines: on an engine whose sequences are not ordered across
// nodes, a GlobalEpoch claim is refused before it draws an epoch, naming the
// engine and the sources that hold there; PerJobEpoch and CounterEpoch claim.
func TestDistributedEngines(t *testing.T) {
	t.Parallel()
	for _, eng := range distributedEngines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			global := newJobs(t, claim.JobsConfig{RenewEvery: -1})
			counter := newJobs(t, claim.JobsConfig{Epochs: claim.CounterEpoch, RenewEvery: -1})
			perJob := newJobs(t, claim.JobsConfig{Epochs: claim.PerJobEpoch, RenewEvery: -1})
			ledger := newLedger(t, claim.LedgerConfig{RenewEvery: -1})
			e := newEnv(t, global.Schema(), counter.Schema(), ledger.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
			db := simulatedEngine{DB: e.db, version: eng.version, citus: eng.citus}
			for what, claimIt := range map[string]func() (*claim.Lease, error){
				"ClaimNext":    func() (*claim.Lease, error) { return global.ClaimNext(ctx, db) },
				"Claim":        func() (*claim.Lease, error) { return global.Claim(ctx, db, int64(1)) },
				"Ledger.Claim": func() (*claim.Lease, error) { return ledger.Claim(ctx, db, "m-1") },
			} {
				l, err := claimIt()
				if !errors.Is(err, claim.ErrUnorderedSequence) || l != nil ||
					!strings.Contains(err.Error(), "is on "+eng.name) || !strings.Contains(err.Error(), "use CounterEpoch") {
					t.Errorf("GlobalEpoch %s on %s: %v, want ErrUnorderedSequence naming the engine and the fix", what, eng.name, err)
				}
			}
			if got := e.query(t, `SELECT is_called::text FROM sqlfence_epoch`); got != "false" {
				t.Errorf("a refused claim drew from the sequence")
			}
			if got := e.query(t, `SELECT count(*) FROM jobs WHERE status <> 'pending'`); got != "0" {
				t.Errorf("%s jobs claimed by refused claims", got)
			}
			for _, j := range []*claim.Jobs{counter, perJob} {
				l, err := j.ClaimNext(ctx, db)
				if err != nil {
					t.Fatalf("claim on %s: %v", eng.name, err)
				}
				defer l.Stop()
			}
		})
	}
}

// TestPostgresIsNotRefused: the probe finds PostgreSQL (no Citus) and the
// GlobalEpoch claim goes ahead, through a *sql.DB (the probe's result is
// remembered) and a *sql.Tx (probed every time).
func TestPostgresIsNotRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
	for range 2 {
		l, err := j.ClaimNext(ctx, e.raw)
		if err != nil {
			t.Fatal(err)
		}
		l.Stop()
	}
	tx, err := e.raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := j.ClaimNext(ctx, tx); err != nil {
		t.Fatal(err)
	}
}

// TestCounterEpochAfterSwitch: a jobs table switched from GlobalEpoch to
// CounterEpoch: Schema starts the counter above the table's epochs, so the
// next claim's epoch is higher than every earlier one. A counter shared by
// two tables makes their epochs comparable.
func TestCounterEpochAfterSwitch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	global := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	e := newEnv(t, global.Schema(), `INSERT INTO jobs DEFAULT VALUES; SELECT setval('sqlfence_epoch', 41)`)
	old, err := global.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx, 0); err != nil {
		t.Fatal(err)
	}
	counter := newJobs(t, claim.JobsConfig{Epochs: claim.CounterEpoch, RenewEvery: -1})
	ledger := newLedger(t, claim.LedgerConfig{Epochs: claim.CounterEpoch, RenewEvery: -1})
	e.exec(t, counter.Schema())
	e.exec(t, counter.Schema()) // idempotent: the counter is not reset
	e.exec(t, ledger.Schema())
	l, err := counter.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	m, err := ledger.Claim(ctx, e.db, "m-1")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	// Epochs on timeline 1 (a fresh cluster) are drawn above 1<<32.
	const floor = 1 << 32
	if old.Epoch != floor+42 || l.Epoch != floor+43 || m.Epoch != floor+44 {
		t.Fatalf("epochs %d (sequence), %d (counter, jobs), %d (counter, claim table); want %d, %d, %d", old.Epoch, l.Epoch, m.Epoch, floor+42, floor+43, floor+44)
	}
	// The counter only grows, whoever writes it.
	for _, q := range []string{
		`UPDATE sqlfence_epoch_counter SET value = 1`,
		`UPDATE sqlfence_epoch_counter SET value = value`,
		`DELETE FROM sqlfence_epoch_counter`,
		`TRUNCATE sqlfence_epoch_counter`,
	} {
		if _, err := e.raw.ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "the epoch counter public.sqlfence_epoch_counter only grows") {
			t.Errorf("%s: %v, want it refused", q, err)
		}
		if _, err := e.fenced.ExecContext(ctx, q); err == nil {
			t.Errorf("%s through sqlfence: not refused", q)
		}
	}
	if got := e.query(t, `SELECT value FROM sqlfence_epoch_counter`); got != "44" {
		t.Errorf("counter %s after the refused writes, want 44", got)
	}
	qualified := newJobs(t, claim.JobsConfig{Table: `"Work".jobs`, Epochs: claim.CounterEpoch, Counter: `"Work"."Counter"`})
	e.exec(t, `CREATE SCHEMA "Work"`)
	e.exec(t, qualified.Schema())
	e.exec(t, `INSERT INTO "Work".jobs DEFAULT VALUES`)
	q, err := qualified.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	if q.Epoch != floor+1 || e.query(t, `SELECT count(*) FROM pg_proc WHERE proname = 'Counter_only_grows' AND pronamespace = '"Work"'::regnamespace`) != "1" {
		t.Errorf("a qualified counter: epoch %d; its trigger function in its own schema?", q.Epoch)
	}
	if _, err := claim.NewJobs(claim.JobsConfig{Epochs: claim.CounterEpoch, Counter: "a.b.c"}); err == nil || !strings.Contains(err.Error(), "bad counter table") {
		t.Errorf("bad counter name: %v", err)
	}
}
