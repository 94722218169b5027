package sqlfenceriver_test

// River on its main driver, riverpgxv5: River runs on a plain pgx pool, the
// handler's business writes go through pgxfence on the application's pool, and
// the handler completes the job with JobCompleteTx in its fenced transaction.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	sqlfenceriver "github.com/sqlfence/sqlfence/contrib/river"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// pgxShipWorker ships in a transaction on the fenced pgx pool and completes the
// job in it.
type pgxShipWorker struct {
	river.WorkerDefaults[ShipArgs]
	db     *pgxfence.Pool
	before func(ctx context.Context, job *river.Job[ShipArgs])

	mu   sync.Mutex
	runs []run
}

func (w *pgxShipWorker) Work(ctx context.Context, job *river.Job[ShipArgs]) error {
	if w.before != nil {
		w.before(ctx, job)
	}
	epoch, ok := sqlfence.EpochFrom(ctx)
	err := w.ship(ctx, job)
	w.mu.Lock()
	w.runs = append(w.runs, run{jobID: job.ID, attempt: job.Attempt, epoch: epoch, hasEpoch: ok, err: err, ctx: ctx})
	w.mu.Unlock()
	return err
}

func (w *pgxShipWorker) ship(ctx context.Context, job *river.Job[ShipArgs]) error {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, job.Args.SKU, job.Args.Qty); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (w *pgxShipWorker) all() []run {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]run(nil), w.runs...)
}

// pgxClient starts a River client on riverpgxv5 over a plain pool.
func (e *env) pgxClient(pool *pgxpool.Pool, workers *river.Workers, middleware ...rivertype.Middleware) *river.Client[pgx.Tx] {
	e.t.Helper()
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		JobTimeout:        -1,
		Logger:            e.logs.logger(),
		Middleware:        middleware,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		RetryPolicy:       quickRetry{},
		TestOnly:          true,
		Workers:           workers,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := c.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.StopAndCancel(ctx); err != nil {
			e.t.Errorf("stopping the River client: %v", err)
		}
	})
	return c
}

// TestRiverPgxRescuedExecutionIsFenced: on riverpgxv5, a stuck execution rescued
// by River and run again under a newer epoch is fenced when it wakes: its write in
// its pgxfence transaction is ErrFenced, its JobCompleteTx never commits, and the
// job is shipped once, by the newer execution, which completed it in its own
// fenced transaction.
func TestRiverPgxRescuedExecutionIsFenced(t *testing.T) {
	t.Parallel()
	ledger, err := claim.NewLedger(claim.LedgerConfig{Lease: time.Second, RenewEvery: -1}) // no keeper: a paused process
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ledger)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	riverPool, err := pgxpool.NewWithConfig(ctx, poolConfig(t, e))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(riverPool.Close)
	appPool, err := pgxpool.NewWithConfig(ctx, poolConfig(t, e))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := sqlfence.ParsePolicy([]byte(testPolicy), "test policy")
	if err != nil {
		t.Fatal(err)
	}
	fenced, err := pgxfence.New(appPool, pol, sqlfence.WithLogger(e.logs.logger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fenced.Close)

	started := make(chan int64, 2)
	wake := make(chan struct{})
	w := &pgxShipWorker{db: fenced, before: func(ctx context.Context, job *river.Job[ShipArgs]) {
		l, _ := sqlfenceriver.LeaseFromContext(ctx)
		started <- l.Epoch
		if job.Attempt == 1 {
			<-wake
		}
	}}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	var out outcomes
	mw := newMiddleware(t, e, sqlfenceriver.Config{Ledger: ledger, JobTimeout: -1, FencedRetry: 10 * time.Millisecond})
	c := e.pgxClient(riverPool, workers, out.middleware(), mw)

	res, err := c.Insert(ctx, ShipArgs{SKU: "widget", Qty: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	first := <-started
	time.Sleep(1100 * time.Millisecond) // the first claim's lease runs out

	exec := riverpgxv5.New(riverPool).GetExecutor()
	if _, err := exec.JobRescueMany(ctx, &riverdriver.JobRescueManyParams{
		ID: []int64{id}, Error: [][]byte{[]byte(`{"error":"Stuck job rescued by JobRescuer"}`)},
		FinalizedAt: []*time.Time{nil}, ScheduledAt: []time.Time{time.Now()}, State: []string{string(rivertype.JobStateAvailable)},
		StuckHorizon: time.Now(),
	}); err != nil {
		t.Fatalf("JobRescueMany: %v", err)
	}
	second := <-started
	e.waitState(id, rivertype.JobStateCompleted)
	if second <= first {
		t.Fatalf("the rescued execution's epoch %d is not above the stuck one's %d", second, first)
	}
	if qty, epoch := e.stock("widget"); qty != 7 || epoch != second {
		t.Fatalf("after the rescued execution: quantity %d, epoch %d; want 7, %d", qty, epoch, second)
	}

	close(wake)
	deadline := time.Now().Add(10 * time.Second)
	for len(out.of(id)) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	errs := out.of(id)
	var sup *sqlfenceriver.SupersededError
	if len(errs) != 2 || errs[0] != nil || !errors.As(errs[1], &sup) || sup.Epoch != first || !errors.Is(errs[1], sqlfence.ErrFenced) {
		t.Fatalf("outcomes = %v; want nil, then a SupersededError at epoch %d matching ErrFenced", errs, first)
	}
	for _, r := range w.all() {
		if r.epoch == first && (!errors.Is(r.err, sqlfence.ErrFenced) || !errors.Is(context.Cause(r.ctx), sqlfence.ErrFenced)) {
			t.Errorf("stuck execution: write error %v, context cause %v; want both ErrFenced", r.err, context.Cause(r.ctx))
		}
	}
	if qty, epoch := e.stock("widget"); qty != 7 || epoch != second {
		t.Errorf("widget: quantity %d, writer_epoch %d; want 7, %d: the stuck write must not land", qty, epoch, second)
	}
	if st := e.jobState(id); st != rivertype.JobStateCompleted {
		t.Errorf("job %s; want completed", st)
	}
}

func poolConfig(t *testing.T, e *env) *pgxpool.Config {
	cfg, err := pgxpool.ParseConfig(e.cfg.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
