package demo

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the plain driver, "pgx"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// WorkerCommand is the hidden subcommand the demo re-executes its own binary with:
// each worker of the story is a real process, so that SIGSTOP pauses it the way a GC
// pause or a migrating VM would.
const WorkerCommand = "demo-worker"

// demoDSNEnv passes the database to the workers without putting a password on
// their command line, where ps would show it.
const demoDSNEnv = "SQLFENCE_DEMO_DSN"

// The statements of the job handler. The handler is the same code under both
// drivers: it reads the count, computes the new count, and writes it back.
const (
	// The claim, as a job queue on PostgreSQL typically makes it: a conditional
	// UPDATE that takes a pending job, or one whose lease has run out, and draws the
	// epoch under the job row's lock. The epoch comes from one sequence, so epochs are
	// comparable across the two jobs that write the same inventory row.
	demoClaimSQL = `UPDATE jobs
SET status = 'claimed',
    lease_epoch = nextval('sqlfence_epoch'),
    lease_expires_at = now() + $2 * interval '1 millisecond'
WHERE id = $1
  AND ((status = 'pending' AND available_at <= now())
       OR (status = 'claimed' AND lease_expires_at < now()))
RETURNING lease_epoch, sku, delta`
	demoHolderSQL   = `SELECT status, lease_epoch, lease_expires_at > now() FROM jobs WHERE id = $1`
	demoReadSQL     = `SELECT quantity FROM inventory WHERE sku = $1`
	demoWriteSQL    = `UPDATE inventory SET quantity = $2 WHERE sku = $1`
	demoCompleteSQL = `UPDATE jobs SET status = 'done', lease_expires_at = NULL WHERE id = $1 AND lease_epoch = $2 AND status = 'claimed'`
)

// workerReply is one line a worker writes to its stdout for each command.
type workerReply struct {
	Op          string `json:"op"`
	Error       string `json:"error,omitempty"`
	Claimed     bool   `json:"claimed,omitempty"`
	Job         int64  `json:"job,omitempty"`
	Epoch       int64  `json:"epoch,omitempty"`
	Delta       int64  `json:"delta,omitempty"`
	HolderEpoch int64  `json:"holder_epoch,omitempty"`
	LeaseLive   bool   `json:"lease_live,omitempty"`
	Quantity    int64  `json:"quantity,omitempty"`
	Wrote       int64  `json:"wrote,omitempty"`
	Rows        int64  `json:"rows,omitempty"`
	Fenced      bool   `json:"fenced,omitempty"`
	StoredEpoch int64  `json:"stored_epoch,omitempty"`
	Cancelled   string `json:"cancelled,omitempty"`
	Completed   bool   `json:"completed,omitempty"`
}

// RunWorker is one worker process. It reads commands from stdin, one per line —
// claim JOB, read, write, complete — runs them, and answers each with a JSON line on
// stdout. It exits at the end of its input.
func RunWorker(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags(WorkerCommand, "Usage: sqlfence demo-worker --driver pgx|sqlfence [--policy FILE] (internal: started by sqlfence demo)\n")
	driver := f.String("driver", "pgx", "pgx or sqlfence")
	policy := f.String("policy", "", "policy file, for the sqlfence driver")
	lease := f.Duration("lease", time.Second, "lease length")
	if _, code, done := f.Parse(args, stdout, stderr); done {
		return code
	}
	w := &demoWorker{lease: *lease, out: json.NewEncoder(stdout)}
	// Built without cgo, the first parse compiles the WebAssembly parser, seconds
	// on a busy machine: done here, before the driver's catalog read and its
	// deadline.
	pgtree.Parse("SELECT", pgtree.Limit)
	if err := w.open(*driver, os.Getenv(demoDSNEnv), *policy); err != nil {
		w.reply(workerReply{Op: "ready", Error: err.Error()})
		return cmdutil.ExitError
	}
	defer w.db.Close()
	w.reply(workerReply{Op: "ready"})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		w.reply(w.do(strings.Fields(in.Text())))
	}
	return cmdutil.ExitOK
}

type demoWorker struct {
	db    *sql.DB
	lease time.Duration
	out   *json.Encoder

	// the current execution
	job, epoch, delta, quantity int64
	sku                         string
	ctx                         context.Context // the handler's context: epoch, cancelled on a fence
	cancel                      context.CancelCauseFunc
}

func (w *demoWorker) reply(r workerReply) { w.out.Encode(r) }

func (w *demoWorker) open(driver, dsn, policy string) error {
	if dsn == "" {
		return errors.New(demoDSNEnv + " is not set: this command is started by `sqlfence demo`")
	}
	switch driver {
	case "pgx":
	case "sqlfence":
		// The only change an application makes: the driver name, and a policy.
		dsn = cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy)
	default:
		return fmt.Errorf("unknown driver %q", driver)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return err
	}
	w.db = db
	return nil
}

func (w *demoWorker) do(cmd []string) workerReply {
	if len(cmd) == 0 {
		return workerReply{Op: "?", Error: "empty command"}
	}
	r := workerReply{Op: cmd[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	switch cmd[0] {
	case "claim":
		if len(cmd) != 2 {
			err = errors.New("usage: claim JOB")
			break
		}
		r.Job, err = strconv.ParseInt(cmd[1], 10, 64)
		if err == nil {
			err = w.claim(ctx, &r)
		}
	case "read":
		err = w.db.QueryRowContext(ctx, demoReadSQL, w.sku).Scan(&w.quantity)
		r.Quantity = w.quantity
	case "write":
		err = w.write(&r)
	case "complete":
		var res sql.Result
		if res, err = w.db.ExecContext(ctx, demoCompleteSQL, w.job, w.epoch); err == nil {
			n, _ := res.RowsAffected()
			r.Completed = n == 1
		}
	default:
		err = fmt.Errorf("unknown command %q", cmd[0])
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

func (w *demoWorker) claim(ctx context.Context, r *workerReply) error {
	err := w.db.QueryRowContext(ctx, demoClaimSQL, r.Job, w.lease.Milliseconds()).Scan(&r.Epoch, &w.sku, &r.Delta)
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err = w.db.QueryRowContext(ctx, demoHolderSQL, r.Job).Scan(&status, &r.HolderEpoch, &r.LeaseLive)
		return err
	}
	if err != nil {
		return err
	}
	r.Claimed = true
	w.job, w.epoch, w.delta = r.Job, r.Epoch, r.Delta
	// The handler's context carries the claim's epoch, and is cancelled, with the
	// fence as its cause, when a write is fenced.
	hctx, cancel := context.WithCancelCause(context.Background())
	w.ctx, w.cancel = sqlfence.OnFenced(sqlfence.WithEpoch(hctx, w.epoch), cancel), cancel
	return nil
}

// write is the handler's write: the count it read, plus the job's delta.
func (w *demoWorker) write(r *workerReply) error {
	if w.ctx == nil {
		return errors.New("write before claim")
	}
	r.Wrote = w.quantity + w.delta
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	res, err := w.db.ExecContext(ctx, demoWriteSQL, w.sku, r.Wrote)
	var fe *sqlfence.Error
	if errors.Is(err, sqlfence.ErrFenced) && errors.As(err, &fe) {
		r.Fenced, r.StoredEpoch = true, fe.StoredEpoch
		if cause := context.Cause(w.ctx); cause != nil {
			r.Cancelled = cause.Error()
		}
		return nil
	}
	if err != nil {
		return err
	}
	r.Rows, _ = res.RowsAffected()
	return nil
}
