package sqlfenceriver_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivertype"

	"github.com/sqlfence/sqlfence"
	sqlfenceriver "github.com/sqlfence/sqlfence/contrib/river"
)

// TxShipArgs ships in one transaction with the claim's completion, River's
// completion and a follow-up job.
type TxShipArgs struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func (TxShipArgs) Kind() string { return "tx_ship" }

type txShipWorker struct {
	river.WorkerDefaults[TxShipArgs]
	db    *sql.DB
	runs  atomic.Int32
	epoch atomic.Int64
}

func (w *txShipWorker) Work(ctx context.Context, job *river.Job[TxShipArgs]) error {
	w.runs.Add(1)
	lease, _ := sqlfenceriver.LeaseFromContext(ctx)
	w.epoch.Store(lease.Epoch)
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, job.Args.SKU, job.Args.Qty); err != nil {
		return err
	}
	// A follow-up job, inserted with the write it follows.
	client := river.ClientFromContext[*sql.Tx](ctx)
	if _, err := client.InsertTx(ctx, tx, ShipArgs{SKU: "gadget", Qty: 1}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}); err != nil {
		return err
	}
	if err := sqlfenceriver.CompleteIn(ctx, tx); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverdatabasesql.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit()
}

// River's own statements run through the sqlfence handle: inserts (unique
// ones too), fetching, completion, transactional completion, InsertTx in a
// fenced transaction, the scheduler, cancellation, queue pause and resume,
// listing, retry and deletion, the leader's maintenance. A statement sqlfence
// refused would fail the call or be logged by River as an error, which fails
// the test (logSink).
func TestRiverStatementsPassThroughSqlfence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ship := &shipWorker{db: e.fenced}
	txShip := &txShipWorker{db: e.fenced}
	workers := river.NewWorkers()
	river.AddWorker(workers, ship)
	river.AddWorker(workers, txShip)
	c := e.client(workers, newMiddleware(t, e, sqlfenceriver.Config{}))
	ctx := t.Context()

	unique := &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
	first, err := c.Insert(ctx, TxShipArgs{SKU: "widget", Qty: 3}, unique)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := c.Insert(ctx, TxShipArgs{SKU: "widget", Qty: 3}, unique)
	if err != nil || !dup.UniqueSkippedAsDuplicate || dup.Job.ID != first.Job.ID {
		t.Fatalf("second unique insert = %+v, %v; want skipped as a duplicate of job %d", dup, err, first.Job.ID)
	}
	e.waitState(first.Job.ID, rivertype.JobStateCompleted)
	if qty, epoch := e.stock("widget"); qty != 7 || epoch != txShip.epoch.Load() {
		t.Errorf("widget: quantity %d, epoch %d; want 7, %d", qty, epoch, txShip.epoch.Load())
	}
	if _, status := e.claimRow(sqlfenceriver.DefaultKey(first.Job)); status != "done" {
		t.Errorf("claim of the transactional job: %q; want done", status)
	}

	// The scheduler (a leader's maintenance service) makes a scheduled job available.
	scheduled, err := c.Insert(ctx, ShipArgs{SKU: "gadget", Qty: 2}, &river.InsertOpts{ScheduledAt: time.Now().Add(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(scheduled.Job.ID, rivertype.JobStateCompleted)
	// The follow-up job InsertTx made.
	list, err := c.JobList(ctx, river.NewJobListParams().Kinds("ship").States(rivertype.JobStateCompleted))
	if err != nil || len(list.Jobs) != 2 {
		t.Fatalf("JobList = %v, %v; want the follow-up and the scheduled job, completed", list, err)
	}
	if qty, _ := e.stock("gadget"); qty != 7 {
		t.Errorf("gadget: quantity %d; want 7 (1 + 2 shipped)", qty)
	}

	later, err := c.Insert(ctx, ShipArgs{SKU: "gadget", Qty: 5}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.JobCancel(ctx, later.Job.ID); err != nil {
		t.Fatalf("JobCancel: %v", err)
	}
	if _, err := c.JobDelete(ctx, later.Job.ID); err != nil {
		t.Fatalf("JobDelete: %v", err)
	}
	if err := c.QueuePause(ctx, river.QueueDefault, nil); err != nil {
		t.Fatalf("QueuePause: %v", err)
	}
	if err := c.QueueResume(ctx, river.QueueDefault, nil); err != nil {
		t.Fatalf("QueueResume: %v", err)
	}
	if _, err := c.QueueList(ctx, river.NewQueueListParams()); err != nil {
		t.Fatalf("QueueList: %v", err)
	}

	// A manual retry of a completed job is delivered again, and the
	// middleware finds its claim done: the job completes without running.
	if _, err := c.JobRetry(ctx, first.Job.ID); err != nil {
		t.Fatalf("JobRetry: %v", err)
	}
	if st := e.jobState(first.Job.ID); st == rivertype.JobStateCompleted {
		t.Fatalf("JobRetry left the job %s", st)
	}
	e.waitState(first.Job.ID, rivertype.JobStateCompleted)
	if n := txShip.runs.Load(); n != 1 {
		t.Errorf("the transactional handler ran %d times; want once (the retry finds the claim done)", n)
	}
}

// River's reindexer (a leader's maintenance service, daily at midnight UTC by
// default) runs REINDEX INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY on its
// own indexes. Those are DDL, which a fenced connection refuses unless the
// policy says ddl: allow: on a sqlfence handle, turn River's reindexer off
// (ReindexerSchedule: river.NeverSchedule()) and reindex from a plain one.
func TestRiverReindexerIsRefusedAsDDL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	fenced := riverdatabasesql.New(e.fenced).GetExecutor()
	if _, err := fenced.IndexReindexArtifacts(t.Context(), &riverdriver.IndexReindexArtifactsParams{Index: "river_job_kind"}); err != nil {
		t.Errorf("the reindexer's artifact lookup through sqlfence: %v", err)
	}
	err := fenced.IndexReindex(t.Context(), &riverdriver.IndexReindexParams{Index: "river_job_kind"})
	if !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("REINDEX INDEX CONCURRENTLY through sqlfence: %v; want ErrRefused (DDL under ddl: deny)", err)
	}
	t.Logf("as expected: %v", err)
	if err := riverdatabasesql.New(e.plain).GetExecutor().IndexReindex(t.Context(), &riverdriver.IndexReindexParams{Index: "river_job_kind"}); err != nil {
		t.Errorf("REINDEX through the plain handle: %v", err)
	}
}
