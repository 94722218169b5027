package sqlfenceriver_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivertype"

	sqlfenceriver "github.com/sqlfence/sqlfence/contrib/river"
)

// README:begin — the "River" block of docs/orms-and-queues.md, checked by TestREADMEExample.

// Shipment is a River job that writes the protected inventory table.
type Shipment struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func (Shipment) Kind() string { return "shipment" }

type ShipmentWorker struct {
	river.WorkerDefaults[Shipment]
	DB *sql.DB // the sqlfence handle
}

func (w *ShipmentWorker) Work(ctx context.Context, job *river.Job[Shipment]) error {
	// ctx carries this execution's epoch: the write is fenced.
	tx, err := w.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, job.Args.SKU, job.Args.Qty)
	if err != nil {
		return err // ErrFenced included: the middleware tells River what to do
	}
	// The claim is done with the writes, or not at all.
	if err := sqlfenceriver.CompleteIn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// newRiverClient runs River on the sqlfence handle db, every job under a claim.
func newRiverClient(db *sql.DB) (*river.Client[*sql.Tx], error) {
	fence, err := sqlfenceriver.New(sqlfenceriver.Config{
		DB:         db,          // the arbiter: the claim table lives in this database
		JobTimeout: time.Minute, // River's JobTimeout, below
	})
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &ShipmentWorker{DB: db})
	return river.NewClient(riverdatabasesql.New(db), &river.Config{
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:              workers,
		Middleware:           []rivertype.Middleware{fence},
		JobTimeout:           time.Minute,
		RescueStuckJobsAfter: time.Hour,             // above JobTimeout + the claim's lease (30s)
		ReindexerSchedule:    river.NeverSchedule(), // REINDEX is DDL: run it from a plain handle
	})
}

// README:end

// TestREADMEExample checks that the River code of docs/orms-and-queues.md is the code above,
// and runs it.
func TestREADMEExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	begin := strings.Index(s, "// README:begin")
	end := strings.Index(s, "// README:end")
	region := strings.TrimSpace(s[strings.Index(s[begin:], "\n")+begin : end])
	readme, err := os.ReadFile("../../docs/orms-and-queues.md")
	if err != nil {
		t.Fatal(err)
	}
	r := string(readme)
	i := strings.Index(r, "\n## River\n")
	if i < 0 {
		t.Fatal("docs/orms-and-queues.md has no ## River section")
	}
	j := strings.Index(r[i:], "```go\n")
	k := strings.Index(r[i+j+6:], "```")
	if j < 0 || k < 0 {
		t.Fatal("the ## River section of docs/orms-and-queues.md has no go block")
	}
	if block := strings.TrimSpace(r[i+j+6 : i+j+6+k]); block != region {
		t.Errorf("the River code of docs/orms-and-queues.md differs from readme_test.go's README region:\n--- docs/orms-and-queues.md\n%s\n--- readme_test.go\n%s", block, region)
	}

	e := newEnv(t, nil)
	client, err := newRiverClient(e.fenced)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(context.Background())
	res, err := client.Insert(t.Context(), Shipment{SKU: "widget", Qty: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(res.Job.ID, rivertype.JobStateCompleted)
	epoch, status := e.claimRow(sqlfenceriver.DefaultKey(res.Job))
	if qty, stamped := e.stock("widget"); qty != 7 || stamped != epoch || status != "done" {
		t.Errorf("widget = %d, epoch %d; claim %d %s; want 7 stamped with the done claim's epoch", qty, stamped, epoch, status)
	}
}
