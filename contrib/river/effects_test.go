package sqlfenceriver_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	sqlfenceriver "github.com/sqlfence/sqlfence/contrib/river"
	"github.com/sqlfence/sqlfence/outbox"
)

// LinkArgs is a chain's link; NextLinkArgs the successor it enqueues. The
// successor carries its parent's effect key, and River's unique-job options
// by args make that key the successor's identity.
type LinkArgs struct {
	SKU string `json:"sku"`
}

func (LinkArgs) Kind() string { return "link" }

type NextLinkArgs struct {
	ParentKey string `json:"parent_key" river:"unique"`
	SKU       string `json:"sku"`
}

func (NextLinkArgs) Kind() string { return "next_link" }

type nextLinkWorker struct {
	river.WorkerDefaults[NextLinkArgs]
}

func (nextLinkWorker) Work(context.Context, *river.Job[NextLinkArgs]) error { return nil }

// linkWorker writes the stock, adds an outbox message and inserts the
// successor in one fenced transaction, and fails its first execution after
// the commit: the second execution, under a new epoch, repeats all three.
type linkWorker struct {
	river.WorkerDefaults[LinkArgs]
	db  *sql.DB
	box *outbox.Outbox

	mu   sync.Mutex
	runs []linkRun
}

type linkRun struct {
	epoch     int64
	key       string
	added     bool // the outbox message
	duplicate bool // River skipped the successor as a duplicate
	successor int64
	commitErr error
}

func (w *linkWorker) Work(ctx context.Context, job *river.Job[LinkArgs]) error {
	lease, ok := sqlfenceriver.LeaseFromContext(ctx)
	if !ok {
		return errors.New("no lease")
	}
	key, err := lease.Key("next")
	if err != nil {
		return err
	}
	r := linkRun{epoch: lease.Epoch, key: key}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The write carries the claim check; so does Add, which also orders the
	// transaction before any takeover (claim.Lease.Check) — the successor's
	// InsertTx below comes after it.
	if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, job.Args.SKU); err != nil {
		return err
	}
	if r.added, err = w.box.Add(ctx, tx, lease, "notify", "shipments", []byte(job.Args.SKU)); err != nil {
		return err
	}
	client := river.ClientFromContext[*sql.Tx](ctx)
	res, err := client.InsertTx(ctx, tx, NextLinkArgs{ParentKey: key, SKU: job.Args.SKU}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return err
	}
	r.duplicate, r.successor = res.UniqueSkippedAsDuplicate, res.Job.ID
	r.commitErr = tx.Commit()
	w.mu.Lock()
	w.runs = append(w.runs, r)
	first := len(w.runs) == 1
	w.mu.Unlock()
	if first {
		return errors.New("the first execution fails after its commit")
	}
	return r.commitErr
}

// TestRiverSuccessorAndOutbox: two executions of a River job that both commit
// add one outbox message and insert one successor, both under the effect key
// that the middleware's lease gives each execution alike.
func TestRiverSuccessorAndOutbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	box, err := outbox.New("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.plain.ExecContext(ctx, box.Schema()); err != nil {
		t.Fatal(err)
	}
	w := &linkWorker{db: e.fenced, box: box}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	river.AddWorker(workers, nextLinkWorker{})
	c := e.client(workers, newMiddleware(t, e, sqlfenceriver.Config{}))
	res, err := c.Insert(ctx, LinkArgs{SKU: "widget"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(res.Job.ID, "completed")
	w.mu.Lock()
	runs := w.runs
	w.mu.Unlock()
	if len(runs) != 2 {
		t.Fatalf("%d executions, want 2: %+v", len(runs), runs)
	}
	a, b := runs[0], runs[1]
	if a.commitErr != nil || b.commitErr != nil || b.epoch <= a.epoch || a.key != b.key {
		t.Fatalf("executions %+v, %+v: want two commits under rising epochs and one key", a, b)
	}
	if !a.added || b.added || a.duplicate || !b.duplicate || a.successor != b.successor {
		t.Fatalf("first %+v, second %+v: want the message added once and one successor", a, b)
	}
	var links, messages int
	if err := e.plain.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM river_job WHERE kind = 'next_link'), (SELECT count(*) FROM sqlfence_outbox)`).Scan(&links, &messages); err != nil {
		t.Fatal(err)
	}
	if links != 1 || messages != 1 {
		t.Fatalf("%d successors, %d messages; want 1 and 1", links, messages)
	}
	if qty, _ := e.stock("widget"); qty != 8 {
		t.Errorf("stock %d, want 8: each execution's write stands (steps would skip the second)", qty)
	}
}
