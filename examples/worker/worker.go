package main

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

//go:embed sqlfence.yaml
var policyYAML []byte

// schema is where the example keeps its tables, so that -dsn never touches
// anything else.
const schema = "worker_example"

type config struct {
	Workers int
	Jobs    int
	Lease   time.Duration
	Pause   time.Duration // worker 0's pause in its first job
	Log     io.Writer
}

// app is what the workers share.
type app struct {
	db     *sql.DB // through sqlfence: the handlers' writes, and the claims
	policy *sqlfence.Policy
	jobs   *claim.Jobs // claims with a keeper renewing the lease
	paused *claim.Jobs // the same table, without a keeper: see work
	lease  time.Duration
	log    io.Writer
	logMu  sync.Mutex

	claims, fenced, superseded atomic.Int64
}

func (a *app) logf(format string, args ...any) {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	fmt.Fprintf(a.log, format+"\n", args...)
}

func run(ctx context.Context, dsn string, cfg config) error {
	pcfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	pcfg.RuntimeParams["search_path"] = schema
	// The raw handle is the operator's: it creates the schema and seeds the
	// stock, writes sqlfence would rightly refuse without an epoch.
	raw := stdlib.OpenDB(*pcfg)
	defer raw.Close()
	policy, err := sqlfence.ParsePolicy(policyYAML, "examples/worker/sqlfence.yaml")
	if err != nil {
		return err
	}
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*pcfg), policy))
	defer db.Close()

	jobsCfg := claim.JobsConfig{Lease: cfg.Lease, Returning: []string{"sku", "qty"}} // GlobalEpoch: the default
	jobs, err := claim.NewJobs(jobsCfg)
	if err != nil {
		return err
	}
	jobsCfg.RenewEvery = -1
	paused, err := claim.NewJobs(jobsCfg)
	if err != nil {
		return err
	}
	if err := setup(ctx, raw, db, jobs, cfg.Jobs); err != nil {
		return err
	}

	a := &app{db: db, policy: policy, jobs: jobs, paused: paused, lease: cfg.Lease, log: cfg.Log}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, cfg.Workers)
	// Worker 0 claims first, so that the job it is paused in is certain to be
	// taken over by one of the others.
	first := make(chan struct{})
	wg.Go(func() { errs[0] = a.work(ctx, 0, cfg.Pause, first) })
	<-first
	for w := 1; w < cfg.Workers; w++ {
		wg.Go(func() { errs[w] = a.work(ctx, w, 0, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	a.logf("%d jobs done in %v: %d claims, %d writes fenced by a newer claim, %d executions superseded",
		cfg.Jobs, time.Since(start).Round(time.Millisecond), a.claims.Load(), a.fenced.Load(), a.superseded.Load())
	return verify(ctx, raw, a.log)
}

// setup creates the tables in a fresh schema: the jobs table and the global
// epoch sequence from claim's DDL, plus the job payload; the two protected
// tables with their epoch columns. Jobs are enqueued through sqlfence: an
// INSERT that leaves status and lease_epoch to their defaults is an ordinary
// write even to a claim table.
func setup(ctx context.Context, raw, db *sql.DB, jobs *claim.Jobs, n int) error {
	ddl := fmt.Sprintf(`
DROP SCHEMA IF EXISTS %[1]s CASCADE;
CREATE SCHEMA %[1]s;
%[2]s
ALTER TABLE jobs ADD COLUMN sku text NOT NULL, ADD COLUMN qty int NOT NULL;
CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0
);
CREATE TABLE reservations (
	job_id       bigint PRIMARY KEY,
	sku          text NOT NULL,
	qty          int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0
);
INSERT INTO inventory (sku, quantity) VALUES ('apple', 1000), ('pear', 1000), ('plum', 1000);
`, schema, jobs.Schema())
	if _, err := raw.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	_, err := db.ExecContext(ctx, `
INSERT INTO jobs (sku, qty)
SELECT (ARRAY['apple', 'pear', 'plum'])[1 + i % 3], 1 + i % 7 FROM generate_series(1, $1) AS i`, n)
	return err
}

// work is one worker's loop: claim the next job, handle it, and repeat until
// every job is done.
//
// Worker 0 is paused in its first job for longer than the lease. A real pause
// (a stop-the-world GC, a VM migration, SIGSTOP) stops the whole process,
// lease keeper included; a sleeping goroutine would not, so its first claim
// is made without a keeper.
func (a *app) work(ctx context.Context, w int, pause time.Duration, claimed chan<- struct{}) error {
	defer func() { // if the loop ends before its first claim
		if claimed != nil {
			close(claimed)
		}
	}()
	for {
		jobs := a.jobs
		if pause > 0 {
			jobs = a.paused
		}
		var (
			sku string
			qty int
		)
		lease, err := jobs.ClaimNext(ctx, a.db, &sku, &qty)
		if errors.Is(err, claim.ErrNoJob) {
			var left int
			if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE status <> 'done'`).Scan(&left); err != nil {
				return err
			}
			if left == 0 {
				return nil
			}
			// Jobs are still held by other workers, or released for a
			// retry; one may yet become claimable here.
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		a.claims.Add(1)
		if claimed != nil {
			close(claimed)
			claimed = nil
		}
		if err := a.runJob(lease, w, sku, qty, pause); err != nil {
			return err
		}
		pause = 0
	}
}

// runJob handles one claimed job and ends its lease: completed with the
// handler's transaction, released for a fresh claim when the handler was
// fenced by a newer claim's write, or left to the successor that superseded
// it. Only errors that are not about the claim stop the worker.
func (a *app) runJob(lease *claim.Lease, w int, sku string, qty int, pause time.Duration) error {
	defer lease.Stop() // whatever happens, no keeper outlives the job
	job := fmt.Sprintf("worker %d: job %v (epoch %d)", w, lease.JobID, lease.Epoch)
	if pause > 0 {
		a.logf("%s: paused for %v, past its %v lease", job, pause, a.lease)
		time.Sleep(pause)
	}
	err := a.handle(lease, sku, qty)
	if err == nil {
		return nil
	}
	// A handler that stopped because its context did reports why.
	if cause := context.Cause(lease.Context()); cause != nil && !errors.Is(err, sqlfence.ErrFenced) {
		err = cause
	}
	if !errors.Is(err, sqlfence.ErrFenced) && !errors.Is(err, claim.ErrLeaseLost) {
		return err
	}
	// Fenced, or the lease was lost. Under global epochs a fence has two
	// meanings, and the release tells them apart: if this claim still holds
	// the job, a newer claim of another job wrote the row first, and the job
	// is handed to a fresh claim with a higher epoch; if not, the job was
	// taken over while this execution was paused, and its successor
	// finishes it.
	switch rerr := lease.Release(context.Background(), 0); {
	case rerr == nil:
		a.fenced.Add(1)
		a.logf("%s: stopped (%v); released for a fresh claim", job, short(err))
		return nil
	case errors.Is(rerr, sqlfence.ErrFenced):
		a.superseded.Add(1)
		a.logf("%s: superseded while paused, stopped: %v", job, short(err))
		return nil
	default:
		return rerr
	}
}

// short is an error's message without the statement it quotes.
func short(err error) string {
	var fe *sqlfence.Error
	if errors.As(err, &fe) {
		c := *fe
		c.Statement, c.Fix = "", ""
		return c.Error()
	}
	return err.Error()
}

// handle is the job's business: decrement the stock, record the reservation.
// Both writes go through sqlfence under the lease's context, which carries
// the epoch; the completion runs in the same transaction, so the writes and
// "job done" commit together or not at all — a superseded execution whose
// writes slipped in before its successor's is still undone, because its
// completion is refused.
func (a *app) handle(lease *claim.Lease, sku string, qty int) error {
	ctx := lease.Context()
	// The early check: if a newer claim has already written this stock row,
	// stop before doing anything.
	if err := sqlfence.CheckSuperseded(ctx, a.db, a.policy, "inventory", "sku = $1", sku); err != nil {
		return err
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, sku, qty); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reservations (job_id, sku, qty) VALUES ($1, $2, $3)`, lease.JobID, sku, qty); err != nil {
		return err
	}
	if err := lease.CompleteIn(context.Background(), tx); err != nil {
		return err
	}
	return tx.Commit()
}

// verify checks the business result: every job reserved exactly once, and
// the stock decremented by exactly the reservations.
func verify(ctx context.Context, raw *sql.DB, log io.Writer) error {
	var bad string
	err := raw.QueryRowContext(ctx, `
SELECT coalesce(string_agg(problem, '; '), '') FROM (
	SELECT 'job ' || j.id || ' is ' || j.status AS problem FROM jobs j WHERE j.status <> 'done'
	UNION ALL
	SELECT 'job ' || j.id || ' has no reservation' FROM jobs j LEFT JOIN reservations r ON r.job_id = j.id WHERE r.job_id IS NULL
	UNION ALL
	SELECT 'stock ' || i.sku || ' is ' || i.quantity || ', expected ' || (1000 - coalesce(sum(r.qty), 0))
	FROM inventory i LEFT JOIN reservations r ON r.sku = i.sku
	GROUP BY i.sku, i.quantity HAVING i.quantity <> 1000 - coalesce(sum(r.qty), 0)
) p`).Scan(&bad)
	if err != nil {
		return err
	}
	if bad != "" {
		return fmt.Errorf("the business tables are wrong: %s", bad)
	}
	var stock string
	if err := raw.QueryRowContext(ctx, `SELECT string_agg(sku || '=' || quantity, ' ' ORDER BY sku) FROM inventory`).Scan(&stock); err != nil {
		return err
	}
	fmt.Fprintf(log, "stock %s: every job applied exactly once\n", stock)
	return nil
}
