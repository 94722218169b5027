//go:build unix

package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/outbox"
)

// The chain chaos test's processes: the test binary re-executed as a worker
// or a relay, so that TestChainChaos can pause, kill and replace them the way
// machines are paused, killed and replaced.

const (
	chainRoleEnv = "SQLFENCE_CHAIN_ROLE" // worker or relay; selects process mode
	chainDSNEnv  = "SQLFENCE_CHAIN_DSN"  // the database, application_name set to the process's name
	chainModeEnv = "SQLFENCE_CHAIN_MODE" // keys, or nokeys: the same workload without effect keys
	chainURLEnv  = "SQLFENCE_CHAIN_URL"  // the receiver, for relays

	chainLease  = time.Second           // short, so that pauses cost little wall time
	chainLinks  = 5                     // jobs per chain
	chainWindow = 50 * time.Millisecond // between a link's two transactions: where pauses land
)

const chainPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
  - name: shipments
claims:
  - table: jobs
`

func chainProcess(role string) int {
	cfg, err := pgx.ParseConfig(os.Getenv(chainDSNEnv))
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	cfg.ConnectTimeout = 2 * time.Second
	raw := sql.OpenDB(stdlib.GetConnector(*cfg))
	box, err := outbox.New("")
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	parent := os.Getppid()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // no process outlives its test
		for os.Getppid() == parent {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	if role == "relay" {
		r := &outbox.Relay{DB: raw, Outbox: box, Send: (&outbox.HTTP{URL: os.Getenv(chainURLEnv)}).Send,
			Workers: 2, MaxAttempts: 1000, Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
			SendTimeout: 500 * time.Millisecond, Poll: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
		if err := r.Run(ctx); err != nil {
			fmt.Println("error", err)
			return 2
		}
		return 0
	}
	pol, err := sqlfence.ParsePolicy([]byte(chainPolicy), "chain chaos")
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	w := &chainWorker{keys: os.Getenv(chainModeEnv) == "keys", arbiter: raw, box: box,
		fenced: sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))}
	if w.jobs, err = claim.NewJobs(claim.JobsConfig{Lease: chainLease, Returning: []string{"chain", "link"}}); err != nil {
		fmt.Println("error", err)
		return 2
	}
	if w.steps, err = claim.NewSteps(""); err != nil {
		fmt.Println("error", err)
		return 2
	}
	for ctx.Err() == nil {
		var chain, link int
		l, err := w.jobs.ClaimNext(ctx, raw, &chain, &link)
		if err != nil {
			if !errors.Is(err, claim.ErrNoJob) && ctx.Err() == nil {
				fmt.Println("error claim:", err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		fmt.Println("claim", l.JobID, l.Epoch)
		err = w.handle(l, chain, link)
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		switch {
		case err == nil:
			fmt.Println("done", l.JobID, l.Epoch)
		case errors.Is(err, sqlfence.ErrFenced):
			fmt.Println("fenced", l.JobID, l.Epoch, err)
			l.Release(rctx, 0) // superseded: fenced too, and the successor finishes
		default:
			fmt.Println("error", l.JobID, l.Epoch, err)
			l.Release(rctx, 0) // a terminated connection or a restart: the job runs again
		}
		rcancel()
		l.Stop()
	}
	return 0
}

type chainWorker struct {
	keys    bool
	arbiter *sql.DB
	fenced  *sql.DB
	jobs    *claim.Jobs
	steps   *claim.Steps
	box     *outbox.Outbox
}

// handle runs one link in two transactions. The first ships (a fenced stock
// write and a shipment record), adds the message for the receiver and enqueues
// the next link; the second completes the job. Between them is the window
// TestChainChaos pauses workers in: the first transaction committed, the
// completion not yet made, so a successor runs the link again.
//
// With keys, the first transaction is a recorded step (a later execution skips
// it), the message goes in under the step's effect key and the successor under
// its parent's. Without, the same statements run with a key per execution —
// what a handler that names its effects by attempt or epoch does.
//
// As in TestChaos, the handler writes under a context its lease cannot cancel:
// the fence and the keys have to hold without the handler noticing anything.
func (w *chainWorker) handle(l *claim.Lease, chain, link int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.Context()), 10*time.Second)
	defer cancel()
	tx, err := w.fenced.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	done := false
	if w.keys {
		if done, err = w.steps.Record(ctx, tx, l, "ship"); err != nil {
			return err
		}
	}
	if !done {
		if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, fmt.Sprint("c", chain)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO shipments (chain, link, epoch) VALUES ($1, $2, $3)`, chain, link, l.Epoch); err != nil {
			return err
		}
		payload := fmt.Appendf(nil, "%d/%d", chain, link)
		if w.keys {
			if _, err := w.box.Add(ctx, tx, l, "notify", "chain", payload); err != nil {
				return err
			}
		} else if _, err := tx.ExecContext(ctx, `INSERT INTO sqlfence_outbox (key, topic, payload, job_table, job_id, step, epoch) VALUES ($1, 'chain', $2, 'jobs', $3, 'notify', $4)`,
			fmt.Sprintf("nokey-%v-%d", l.JobID, l.Epoch), payload, claim.JobText(l.JobID), l.Epoch); err != nil {
			return err
		}
		if link < chainLinks {
			if w.keys {
				if _, _, err := w.jobs.EnqueueSuccessor(ctx, tx, l, "next", []string{"chain", "link"}, chain, link+1); err != nil {
					return err
				}
			} else if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (chain, link) VALUES ($1, $2)`, chain, link+1); err != nil {
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	tx.Rollback()
	// The window: marked for the test, which finds it in pg_stat_activity.
	if _, err := w.fenced.ExecContext(ctx, `SELECT 'chain-window'`); err != nil {
		return err
	}
	time.Sleep(chainWindow)
	tx, err = w.fenced.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := l.CompleteIn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}
