package main

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/outbox"
)

//go:embed sqlfence.yaml
var policyYAML []byte

// schema is where the example keeps its tables, so that -dsn never touches
// anything else.
const schema = "chain_example"

type config struct {
	Chains, Links, Workers int
	Lease, Pause           time.Duration
	Log                    io.Writer
}

// app is what the workers share.
type app struct {
	db     *sql.DB     // through sqlfence: the handlers' transactions
	jobs   *claim.Jobs // claims with a keeper renewing the lease
	paused *claim.Jobs // the same table without a keeper: a paused process renews nothing
	steps  *claim.Steps
	box    *outbox.Outbox
	links  int
	logMu  sync.Mutex
	log    io.Writer

	superseded atomic.Int64
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
	raw := stdlib.OpenDB(*pcfg) // the operator's handle: schema, seed, the relay, the check
	defer raw.Close()
	policy, err := sqlfence.ParsePolicy(policyYAML, "examples/chain/sqlfence.yaml")
	if err != nil {
		return err
	}
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*pcfg), policy))
	defer db.Close()

	jobsCfg := claim.JobsConfig{Lease: cfg.Lease, Returning: []string{"chain", "link"}}
	a := &app{db: db, links: cfg.Links, log: cfg.Log}
	if a.jobs, err = claim.NewJobs(jobsCfg); err != nil {
		return err
	}
	jobsCfg.RenewEvery = -1
	if a.paused, err = claim.NewJobs(jobsCfg); err != nil {
		return err
	}
	if a.steps, err = claim.NewSteps(""); err != nil {
		return err
	}
	if a.box, err = outbox.New(""); err != nil {
		return err
	}
	if err := a.setup(ctx, raw, cfg.Chains); err != nil {
		return err
	}

	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.stop()
	relayCtx, stopRelay := context.WithCancel(ctx)
	defer stopRelay()
	var failures atomic.Int64
	relay := &outbox.Relay{
		DB: raw, Outbox: a.box, Send: (&outbox.HTTP{URL: rcv.url, ContentType: "text/plain"}).Send,
		Workers: 2, Backoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Poll: 20 * time.Millisecond, SendTimeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler), // the observer reports instead
		Observe: func(ev outbox.Event) {
			if ev.Kind != outbox.Delivered {
				failures.Add(1)
				a.logf("relay: %s %s (job %s, attempt %d): %v", ev.Kind, ev.Message.Key, ev.Message.JobID, ev.Message.Attempt, ev.Err)
			}
		},
	}
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx) }()

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, cfg.Workers)
	first := make(chan struct{}) // worker 0 claims first, so its paused link is certain to be taken over
	wg.Go(func() { errs[0] = a.work(ctx, 0, cfg.Pause, first) })
	<-first
	for w := 1; w < cfg.Workers; w++ {
		wg.Go(func() { errs[w] = a.work(ctx, w, 0, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The jobs are done; the relay finishes delivering what they added.
	for {
		var left int
		if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM sqlfence_outbox WHERE delivered_at IS NULL`).Scan(&left); err != nil {
			return err
		}
		if left == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopRelay()
	if err := <-relayDone; err != nil {
		return err
	}
	applied, requests := rcv.counts()
	a.logf("%d chains of %d links in %v: %d executions superseded, %d failed deliveries retried; receiver: %d requests, %d effects applied",
		cfg.Chains, cfg.Links, time.Since(start).Round(time.Millisecond), a.superseded.Load(), failures.Load(), requests, applied)
	return verify(ctx, raw, rcv, cfg, a.log)
}

// setup creates the tables in a fresh schema and starts every chain with
// its first link.
func (a *app) setup(ctx context.Context, raw *sql.DB, chains int) error {
	ddl := fmt.Sprintf(`
DROP SCHEMA IF EXISTS %[1]s CASCADE;
CREATE SCHEMA %[1]s;
%[2]s
ALTER TABLE jobs ADD COLUMN chain int NOT NULL, ADD COLUMN link int NOT NULL;
%[3]s
%[4]s
CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0
);
CREATE TABLE shipments (
	chain        int NOT NULL,
	link         int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (chain, link)
);
`, schema, a.jobs.Schema(), a.steps.Schema(), a.box.Schema())
	if _, err := raw.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO inventory (sku, quantity) SELECT 'item-' || c, 1000 FROM generate_series(1, $1) AS c`, chains); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	_, err := a.db.ExecContext(ctx, `INSERT INTO jobs (chain, link) SELECT c, 1 FROM generate_series(1, $1) AS c`, chains)
	return err
}

// work is one worker's loop: claim the next link, run it, repeat until every
// job is done. Worker 0 is paused in its first link past its lease; a real
// pause stops the lease keeper too, so that claim is made without one.
func (a *app) work(ctx context.Context, w int, pause time.Duration, claimed chan<- struct{}) error {
	defer func() {
		if claimed != nil {
			close(claimed)
		}
	}()
	for {
		jobs := a.jobs
		if pause > 0 {
			jobs = a.paused
		}
		var chain, link int
		lease, err := jobs.ClaimNext(ctx, a.db, &chain, &link)
		if errors.Is(err, claim.ErrNoJob) {
			var left int
			if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE status <> 'done'`).Scan(&left); err != nil {
				return err
			}
			if left == 0 {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		if claimed != nil {
			close(claimed)
			claimed = nil
		}
		err = a.runLink(lease, w, chain, link, pause)
		lease.Stop()
		if err != nil {
			return err
		}
		pause = 0
	}
}

// runLink runs one link in two transactions, each its own step:
//
//  1. "ship": decrement the stock, record the shipment (both fenced) and add
//     the message for the receiver (under the step's effect key), together.
//  2. enqueue the next link under the parent's key, and complete this one,
//     together.
//
// A later execution skips step 1 if it committed, and step 2 cannot commit
// twice: the completion is fenced, and the successor's key is unique.
func (a *app) runLink(lease *claim.Lease, w, chain, link int, pause time.Duration) error {
	ctx := lease.Context()
	job := fmt.Sprintf("worker %d: chain %d link %d (job %v, epoch %d)", w, chain, link, lease.JobID, lease.Epoch)
	ran, err := a.steps.Run(ctx, a.db, lease, "ship", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, fmt.Sprint("item-", chain)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO shipments (chain, link) VALUES ($1, $2)`, chain, link); err != nil {
			return err
		}
		_, err := a.box.Add(ctx, tx, lease, "notify", "shipments", fmt.Appendf(nil, "chain %d link %d shipped", chain, link))
		return err
	})
	if err != nil {
		return a.stopped(lease, job, err)
	}
	if !ran {
		a.logf("%s: step ship was committed by an earlier execution; skipped", job)
	}
	if pause > 0 {
		a.logf("%s: shipped, then paused for %v, past its lease", job, pause)
		time.Sleep(pause)
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return a.stopped(lease, job, err)
	}
	defer tx.Rollback()
	if link < a.links {
		if _, _, err := a.jobs.EnqueueSuccessor(ctx, tx, lease, "next", []string{"chain", "link"}, chain, link+1); err != nil {
			return a.stopped(lease, job, err)
		}
	}
	if err := lease.CompleteIn(context.Background(), tx); err != nil {
		return a.stopped(lease, job, err)
	}
	if err := tx.Commit(); err != nil {
		return a.stopped(lease, job, err)
	}
	return nil
}

// stopped handles a link that could not finish: superseded (its successor
// finishes the link) or lease lost, it is logged and the worker goes on;
// anything else stops the worker.
func (a *app) stopped(lease *claim.Lease, job string, err error) error {
	if cause := context.Cause(lease.Context()); cause != nil && !errors.Is(err, sqlfence.ErrFenced) {
		err = cause
	}
	if !errors.Is(err, sqlfence.ErrFenced) && !errors.Is(err, claim.ErrLeaseLost) {
		return fmt.Errorf("%s: %w", job, err)
	}
	// Under global epochs a fence may also come from another job's newer
	// write; the release tells: if this claim still holds the job, it is
	// handed to a fresh claim.
	if rerr := lease.Release(context.Background(), 0); rerr == nil {
		a.logf("%s: fenced by another job's write; released for a fresh claim", job)
		return nil
	}
	a.superseded.Add(1)
	var fe *sqlfence.Error
	if errors.As(err, &fe) {
		a.logf("%s: superseded: %s", job, fe.Reason)
	} else {
		a.logf("%s: superseded: %v", job, err)
	}
	return nil
}

// verify checks the result from the tables and the receiver: every chain
// complete, one job per link, one shipment per link, the stock down by
// exactly the shipments, every message delivered and applied once.
func verify(ctx context.Context, raw *sql.DB, rcv *receiver, cfg config, log io.Writer) error {
	var bad string
	err := raw.QueryRowContext(ctx, `
SELECT coalesce(string_agg(problem, '; '), '') FROM (
	SELECT 'chain ' || chain || ' link ' || link || ' has ' || count(*) || ' jobs' AS problem FROM jobs GROUP BY chain, link HAVING count(*) <> 1
	UNION ALL
	SELECT 'job ' || id || ' is ' || status FROM jobs WHERE status <> 'done'
	UNION ALL
	SELECT 'chain ' || c || ' has ' || (SELECT count(*) FROM shipments s WHERE s.chain = c) || ' shipments'
	FROM generate_series(1, $1) AS c WHERE (SELECT count(*) FROM shipments s WHERE s.chain = c) <> $2
	UNION ALL
	SELECT 'stock ' || sku || ' is ' || quantity FROM inventory WHERE quantity <> 1000 - $2
	UNION ALL
	SELECT 'message ' || key || ' undelivered' FROM sqlfence_outbox WHERE delivered_at IS NULL
	UNION ALL
	SELECT 'the outbox holds ' || count(*) || ' messages' FROM sqlfence_outbox HAVING count(*) <> $1 * $2
) p`, cfg.Chains, cfg.Links).Scan(&bad)
	if err != nil {
		return err
	}
	if bad != "" {
		return fmt.Errorf("the tables are wrong: %s", bad)
	}
	if applied, _ := rcv.counts(); applied != cfg.Chains*cfg.Links {
		return fmt.Errorf("the receiver applied %d effects, want %d", applied, cfg.Chains*cfg.Links)
	}
	fmt.Fprintln(log, "every chain ran end to end exactly once; every message delivered, and applied once")
	return nil
}
