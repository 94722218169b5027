//go:build unix

package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// The chaos worker: a process of its own (the test binary re-executed with
// chaosWorkerEnv set), so that TestChaos can pause, kill and replace it the way a
// machine pauses, kills and replaces a real one.

const (
	chaosWorkerEnv = "SQLFENCE_CHAOS_WORKER" // the worker's name; selects worker mode
	chaosDSNEnv    = "SQLFENCE_CHAOS_DSN"    // the database, application_name set to the worker's name
	chaosModeEnv   = "SQLFENCE_CHAOS_MODE"   // plain, or the stale: setting of the sqlfence policy

	chaosLease   = time.Second           // short, so that pauses and kills cost little wall time
	chaosCompute = 40 * time.Millisecond // the handler's "computation" between its read and its write
)

// chaosWorker claims jobs until its parent goes away, and prints one line per
// claim ("claim"), completion ("done"), fence ("fenced") and other failure
// ("error"): the parent counts them. It never decides anything from what it
// prints: the data alone is checked.
func chaosWorker(name string) int {
	mode := os.Getenv(chaosModeEnv)
	cfg, err := pgx.ParseConfig(os.Getenv(chaosDSNEnv))
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	cfg.ConnectTimeout = 2 * time.Second
	arbiter := sql.OpenDB(stdlib.GetConnector(*cfg))
	handlers := arbiter // plain: the same workload with no fencing at all
	if mode != "plain" {
		pol, err := sqlfence.ParsePolicy([]byte(chaosPolicy+"stale: "+mode+"\n"), "chaos")
		if err != nil {
			fmt.Println("error", err)
			return 2
		}
		handlers = sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	}
	jobs, err := claim.NewJobs(claim.JobsConfig{Lease: chaosLease, Returning: []string{"src", "dst", "qty"}})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	parent := os.Getppid()
	for os.Getppid() == parent { // a worker outlives no test
		var (
			src, dst string
			qty      int
		)
		l, err := jobs.ClaimNext(context.Background(), arbiter, &src, &dst, &qty)
		if err != nil {
			if !errors.Is(err, claim.ErrNoJob) {
				fmt.Println("error claim:", err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		fmt.Println("claim", l.JobID, l.Epoch)
		err = chaosHandle(l, handlers, src, dst, qty)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		switch {
		case err == nil:
			fmt.Println("done", l.JobID, l.Epoch)
		case errors.Is(err, sqlfence.ErrFenced):
			fmt.Println("fenced", l.JobID, l.Epoch, err)
			l.Release(ctx, 0) // still held (another job's newer epoch): retried at once; superseded: fenced too
		default:
			fmt.Println("error", l.JobID, l.Epoch, err)
			l.Release(ctx, 0) // a terminated connection or a restart: the job runs again
		}
		cancel()
		l.Stop()
	}
	return 0
}

// chaosPolicy protects the stock and the record of what each job did; the jobs
// table is the arbiter.
const chaosPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
  - name: transfers
claims:
  - table: jobs
`

// chaosHandle moves qty from src to dst in two steps, each its own transaction,
// and records each step in transfers. Step 1 reads whether an earlier execution
// did it, computes (a sleep: the window TestChaos pauses workers in), then reads
// the stock and writes the result back (read-compute-write under FOR UPDATE, as it
// must be between live claims). Step 2 adds to dst (a relative update) and
// completes the job in the same transaction. A later execution of the job skips a
// step an earlier one committed.
//
// The handler writes under a context that the lease cannot cancel. Checking the
// lease before each write would not close the gap between the check and the
// write — a pause can fall in between — so the test removes the check, widening
// the gap to the whole pause: the fence has to hold without the handler noticing
// anything.
func chaosHandle(l *claim.Lease, db *sql.DB, src, dst string, qty int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.Context()), 10*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var done bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM transfers WHERE job_id = $1 AND step = 1)`, l.JobID).Scan(&done); err != nil {
		return err
	}
	if !done {
		time.Sleep(chaosCompute) // where TestChaos pauses workers: after the progress read, before the write
		var q int
		if err := tx.QueryRowContext(ctx, `SELECT quantity FROM inventory WHERE sku = $1 FOR UPDATE`, src).Scan(&q); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = $2 WHERE sku = $1`, src, q-qty); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO transfers (job_id, step, epoch) VALUES ($1, 1, $2)`, l.JobID, l.Epoch); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity + $2 WHERE sku = $1`, dst, qty); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO transfers (job_id, step, epoch) VALUES ($1, 2, $2)`, l.JobID, l.Epoch); err != nil {
		return err
	}
	if err := l.CompleteIn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}
