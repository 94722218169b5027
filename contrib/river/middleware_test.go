package sqlfenceriver_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivertype"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	sqlfenceriver "github.com/sqlfence/sqlfence/contrib/river"
)

func newMiddleware(t *testing.T, e *env, cfg sqlfenceriver.Config) *sqlfenceriver.Middleware {
	t.Helper()
	cfg.DB = e.fenced
	if cfg.Logger == nil {
		cfg.Logger = e.logs.logger()
	}
	m, err := sqlfenceriver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func insert(t *testing.T, c *river.Client[*sql.Tx], args ShipArgs) int64 {
	t.Helper()
	res, err := c.Insert(t.Context(), args, nil)
	if err != nil {
		t.Fatalf("River's insert through sqlfence: %v", err)
	}
	return res.Job.ID
}

// With the middleware, a handler's protected write carries the epoch of the
// execution's claim, drawn from the global sequence, and the claim is
// completed with the job.
func TestHandlerWritesUnderTheClaimsEpoch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w := &shipWorker{db: e.fenced}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c := e.client(workers, newMiddleware(t, e, sqlfenceriver.Config{}))

	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	e.waitState(id, rivertype.JobStateCompleted)

	runs := w.all()
	if len(runs) != 1 || runs[0].err != nil || !runs[0].hasEpoch || runs[0].epoch <= 0 {
		t.Fatalf("runs = %+v; want one successful run with an epoch", runs)
	}
	qty, epoch := e.stock("widget")
	if qty != 7 || epoch != runs[0].epoch {
		t.Errorf("widget: quantity %d, writer_epoch %d; want 7 stamped with the claim's epoch %d", qty, epoch, runs[0].epoch)
	}
	if ce, status := e.claimRow(sqlfenceriver.DefaultKey(&rivertype.JobRow{ID: id})); ce != runs[0].epoch || status != "done" {
		t.Errorf("claim row: epoch %d, %q; want %d, done", ce, status, runs[0].epoch)
	}
	var last int64
	// Epochs are drawn above the arbiter's timeline: 1<<32 on a fresh cluster.
	if err := e.plain.QueryRowContext(t.Context(), `SELECT last_value FROM sqlfence_epoch`).Scan(&last); err != nil || 1<<32+last != runs[0].epoch {
		t.Errorf("sequence sqlfence_epoch at %d (%v); the epoch %d should be 1<<32 + its value (timeline 1)", last, err, runs[0].epoch)
	}
}

// Without the middleware, River runs the job on the sqlfence handle as well,
// but the handler's context carries no epoch: the protected write is refused
// with ErrUnfenced and nothing is written.
func TestWithoutMiddlewareWritesAreUnfenced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w := &shipWorker{db: e.fenced, onErr: func(err error) error { return river.JobCancel(err) }}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c := e.client(workers)

	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	e.waitState(id, rivertype.JobStateCancelled)

	runs := w.all()
	if len(runs) != 1 || runs[0].hasEpoch || !errors.Is(runs[0].err, sqlfence.ErrUnfenced) {
		t.Fatalf("runs = %+v; want one run without an epoch whose write failed with ErrUnfenced", runs)
	}
	if qty, epoch := e.stock("widget"); qty != 10 || epoch != 0 {
		t.Errorf("widget: quantity %d, writer_epoch %d; want 10, 0 (nothing written)", qty, epoch)
	}
}

// A stuck execution — paused past its lease, so it stops renewing — is
// rescued by River and run again by another execution, which claims a newer
// epoch and writes. When the stuck one wakes and writes, its write is fenced,
// its context is cancelled, and River is told to snooze, not to cancel or
// retry: the job stays completed, shipped once.
func TestRescuedExecutionFencesTheStuckOne(t *testing.T) {
	t.Parallel()
	ledger, err := claim.NewLedger(claim.LedgerConfig{Lease: time.Second, RenewEvery: -1}) // no keeper: a paused process
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ledger)
	started := make(chan int64, 2)
	wake := make(chan struct{})
	w := &shipWorker{db: e.fenced, before: func(ctx context.Context, job *river.Job[ShipArgs]) {
		l, _ := sqlfenceriver.LeaseFromContext(ctx)
		started <- l.Epoch
		if job.Attempt == 1 {
			<-wake // paused: does not even notice its context
		}
	}}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	var out outcomes
	mw := newMiddleware(t, e, sqlfenceriver.Config{Ledger: ledger, JobTimeout: -1, FencedRetry: 10 * time.Millisecond})
	c := e.client(workers, out.middleware(), mw)

	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	first := <-started
	time.Sleep(1100 * time.Millisecond) // the first claim's lease runs out

	// River's rescuer, by its own statements, through the sqlfence handle.
	exec := riverdatabasesql.New(e.fenced).GetExecutor()
	stuck, err := exec.JobGetStuck(t.Context(), &riverdriver.JobGetStuckParams{Max: 10, StuckHorizon: time.Now()})
	if err != nil || len(stuck) != 1 || stuck[0].ID != id {
		t.Fatalf("JobGetStuck = %v, %v; want job %d", stuck, err, id)
	}
	if _, err := exec.JobRescueMany(t.Context(), &riverdriver.JobRescueManyParams{
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

	close(wake) // the stuck execution wakes and writes
	deadline := time.Now().Add(10 * time.Second)
	for len(out.of(id)) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	errs := out.of(id)
	if len(errs) != 2 || errs[0] != nil {
		t.Fatalf("outcomes = %v; want the rescued execution's nil, then the stuck one's", errs)
	}
	stale := errs[1]
	var sup *sqlfenceriver.SupersededError
	var snooze *rivertype.JobSnoozeError
	if !errors.As(stale, &sup) || sup.Epoch != first || !errors.Is(stale, sqlfence.ErrFenced) || !errors.As(stale, &snooze) {
		t.Errorf("the stuck execution returned %v; want a SupersededError at epoch %d that is a JobSnooze and matches ErrFenced", stale, first)
	}
	var staleRun run
	for _, r := range w.all() {
		if r.epoch == first {
			staleRun = r
		}
	}
	if !errors.Is(staleRun.err, sqlfence.ErrFenced) || !errors.Is(context.Cause(staleRun.ctx), sqlfence.ErrFenced) {
		t.Errorf("stuck execution: write error %v, context cause %v; want both ErrFenced", staleRun.err, context.Cause(staleRun.ctx))
	}
	// Judged on the data: shipped once, by the newer execution.
	if qty, epoch := e.stock("widget"); qty != 7 || epoch != second {
		t.Errorf("widget: quantity %d, writer_epoch %d; want 7, %d: the stuck write must not land", qty, epoch, second)
	}
	time.Sleep(200 * time.Millisecond)
	if st := e.jobState(id); st != rivertype.JobStateCompleted || len(w.all()) != 2 {
		t.Errorf("job %s after %d runs; want completed after 2", st, len(w.all()))
	}
	if ce, status := e.claimRow(sqlfenceriver.DefaultKey(&rivertype.JobRow{ID: id})); ce != second || status != "done" {
		t.Errorf("claim row: epoch %d, %q; want %d, done", ce, status, second)
	}
}

// Epochs from one sequence are comparable across jobs, so a job whose claim
// is older than another job's that wrote the same row first is fenced there
// while still holding its own claim. It is not superseded: the middleware
// releases the claim and the job runs again under a fresh epoch.
func TestFencedByAnotherJobRunsAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	holdA := make(chan struct{})
	aStarted := make(chan struct{}, 1)
	w := &shipWorker{db: e.fenced, before: func(ctx context.Context, job *river.Job[ShipArgs]) {
		if job.Args.Qty == 3 {
			select {
			case aStarted <- struct{}{}:
				<-holdA
			default:
			}
		}
	}}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	var out outcomes
	c := e.client(workers, out.middleware(), newMiddleware(t, e, sqlfenceriver.Config{FencedRetry: 10 * time.Millisecond}))

	a := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	<-aStarted
	b := insert(t, c, ShipArgs{SKU: "widget", Qty: 2})
	e.waitState(b, rivertype.JobStateCompleted)
	close(holdA)
	e.waitState(a, rivertype.JobStateCompleted)

	var aRuns []run
	var bEpoch int64
	for _, r := range w.all() {
		switch r.jobID {
		case a:
			aRuns = append(aRuns, r)
		case b:
			bEpoch = r.epoch
		}
	}
	if len(aRuns) != 2 || !errors.Is(aRuns[0].err, sqlfence.ErrFenced) || aRuns[0].epoch >= bEpoch ||
		aRuns[1].err != nil || aRuns[1].epoch <= bEpoch {
		t.Fatalf("job A runs = %+v (B's epoch %d); want a fenced run under an older epoch, then a successful one under a newer", aRuns, bEpoch)
	}
	if errs := out.of(a); len(errs) != 2 || !errors.As(errs[0], new(*rivertype.JobSnoozeError)) || errors.As(errs[0], new(*sqlfenceriver.SupersededError)) {
		t.Errorf("job A's outcomes = %v; want a plain snooze (not superseded), then nil", errs)
	}
	if qty, epoch := e.stock("widget"); qty != 5 || epoch != aRuns[1].epoch {
		t.Errorf("widget: quantity %d, epoch %d; want 5 (both shipped once), %d", qty, epoch, aRuns[1].epoch)
	}
}

// River delivers at least once: a job it delivers again after a previous
// execution completed its claim (River lost its own completion) is completed
// without running the handler again.
func TestDoneJobIsNotRunAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w := &shipWorker{db: e.fenced}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c := e.client(workers, newMiddleware(t, e, sqlfenceriver.Config{}))

	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	e.waitState(id, rivertype.JobStateCompleted)
	// River forgets that it completed the job.
	if _, err := e.plain.ExecContext(t.Context(), `UPDATE river_job SET state = 'available', finalized_at = NULL, scheduled_at = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	e.waitState(id, rivertype.JobStateCompleted)
	if runs := w.all(); len(runs) != 1 {
		t.Errorf("handler ran %d times; want once", len(runs))
	}
	if qty, _ := e.stock("widget"); qty != 7 {
		t.Errorf("widget: quantity %d; want 7 (shipped once)", qty)
	}
}

// A delivery of a job whose claim another execution holds snoozes until that
// lease ends, without counting an attempt, and then runs.
func TestHeldJobSnoozesUntilTheClaimIsFree(t *testing.T) {
	t.Parallel()
	ledger, err := claim.NewLedger(claim.LedgerConfig{Lease: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ledger)
	w := &shipWorker{db: e.fenced}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	var out outcomes
	c := e.client(workers, out.middleware(), newMiddleware(t, e, sqlfenceriver.Config{Ledger: ledger}))

	// Another execution holds the job's claim: the one River inserts next.
	var next int64
	if err := e.plain.QueryRowContext(t.Context(), `SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM river_job_id_seq`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	other, err := ledger.Claim(context.Background(), e.fenced, sqlfenceriver.DefaultKey(&rivertype.JobRow{ID: next}))
	if err != nil {
		t.Fatal(err)
	}
	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	if id != next {
		t.Skipf("River gave the job id %d, not %d", id, next)
	}
	time.Sleep(200 * time.Millisecond)
	if len(w.all()) != 0 {
		t.Fatalf("handler ran while another execution held the claim")
	}
	if err := other.Release(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	e.waitState(id, rivertype.JobStateCompleted)
	runs := w.all()
	if len(runs) != 1 || runs[0].epoch <= other.Epoch || runs[0].attempt != 1 {
		t.Errorf("runs = %+v; want one run, attempt 1 (snoozes do not count), above the other claim's epoch %d", runs, other.Epoch)
	}
	if errs := out.of(id); len(errs) < 2 || !errors.As(errs[0], new(*rivertype.JobSnoozeError)) || errs[len(errs)-1] != nil {
		t.Errorf("outcomes = %v; want snoozes, then nil", errs)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  sqlfenceriver.Config
		want string
	}{
		{sqlfenceriver.Config{}, "Config.DB is nil"},
		{sqlfenceriver.Config{DB: fakeDB{}, JobTimeout: -2}, "JobTimeout"},
		{sqlfenceriver.Config{DB: fakeDB{}, StuckThreshold: -1}, "StuckThreshold"},
	} {
		if _, err := sqlfenceriver.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v; want an error about %s", tc.cfg, err, tc.want)
		}
	}
	if _, ok := sqlfenceriver.LeaseFromContext(context.Background()); ok {
		t.Error("LeaseFromContext outside a handler reported a lease")
	}
	if err := sqlfenceriver.CompleteIn(context.Background(), fakeDB{}); err == nil {
		t.Error("CompleteIn outside a handler succeeded")
	}
	if got := sqlfenceriver.DefaultKey(&rivertype.JobRow{ID: 42}); got != "river:42" {
		t.Errorf("DefaultKey = %q", got)
	}
}

// fakeDB is a claim.DB that is never reached.
type fakeDB struct{ claim.DB }

// A handler still running when its job timeout and River's stuck threshold
// have passed is taken for stuck: the middleware stops renewing its claim and
// cancels its context, so the claim lapses and the next execution can take
// the job over.
func TestStuckHandlerStopsRenewing(t *testing.T) {
	t.Parallel()
	ledger, err := claim.NewLedger(claim.LedgerConfig{Lease: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ledger)
	unstick := make(chan struct{})
	w := &shipWorker{db: e.fenced, before: func(ctx context.Context, job *river.Job[ShipArgs]) {
		if job.Attempt == 1 {
			<-unstick // ignores its context
		}
	}}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	var out outcomes
	mw := newMiddleware(t, e, sqlfenceriver.Config{Ledger: ledger, JobTimeout: 100 * time.Millisecond, StuckThreshold: 100 * time.Millisecond})
	c := e.client(workers, out.middleware(), mw)
	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	key := sqlfenceriver.DefaultKey(&rivertype.JobRow{ID: id})

	// Past 200ms the keeper stops; within one lease after that the claim lapses.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var lapsed bool
		if err := e.plain.QueryRowContext(t.Context(), `SELECT lease_expires_at < now() FROM sqlfence_claims WHERE job_id = $1`, key).Scan(&lapsed); err == nil && lapsed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stuck handler's claim is still renewed after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(unstick)
	e.waitState(id, rivertype.JobStateCompleted)
	runs := w.all()
	if len(runs) != 2 || runs[0].err == nil || !errors.Is(context.Cause(runs[0].ctx), claim.ErrEnded) || runs[1].err != nil || runs[1].epoch <= runs[0].epoch {
		t.Fatalf("runs = %+v; want the stuck run cancelled (ErrEnded) and failing, then a run under a newer epoch", runs)
	}
	if qty, epoch := e.stock("widget"); qty != 7 || epoch != runs[1].epoch {
		t.Errorf("widget: quantity %d, epoch %d; want 7, %d", qty, epoch, runs[1].epoch)
	}
}

// The superseded execution learns of its successor while the successor is
// still running: River's job row is then the successor's, and whatever the
// superseded execution returns is applied to it. Its snooze makes River
// deliver the job once more; that delivery finds the successor's claim held
// and waits, and once the successor completes its claim the job ends
// completed, shipped once. (A JobCancel here would have cancelled the job
// under the successor, and River would have ignored the successor's result.)
func TestSupersededWhileTheSuccessorRuns(t *testing.T) {
	t.Parallel()
	paused, err := claim.NewLedger(claim.LedgerConfig{Lease: time.Second, RenewEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	live, err := claim.NewLedger(claim.LedgerConfig{Lease: time.Second, RenewEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, live)
	started := make(chan int64, 4)
	wake1, wake2 := make(chan struct{}), make(chan struct{})
	w := &shipWorker{db: e.fenced}
	var runsBefore atomic.Int32
	w.before = func(ctx context.Context, job *river.Job[ShipArgs]) {
		l, _ := sqlfenceriver.LeaseFromContext(ctx)
		n := runsBefore.Add(1)
		started <- l.Epoch
		if n == 1 {
			<-wake1 // the first execution, paused
		}
	}
	w.after = func(ctx context.Context, job *river.Job[ShipArgs]) {
		if runsBefore.Load() == 2 && len(w.all()) == 1 {
			<-wake2 // the successor, still running after its write
		}
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	var out outcomes
	cfg := sqlfenceriver.Config{JobTimeout: -1, FencedRetry: 10 * time.Millisecond}
	cfg.Ledger = paused
	first := newMiddleware(t, e, cfg)
	cfg.Ledger = live
	rest := newMiddleware(t, e, cfg)
	var deliveries atomic.Int32
	dispatch := river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
		if deliveries.Add(1) == 1 {
			return first.Work(ctx, job, doInner)
		}
		return rest.Work(ctx, job, doInner)
	})
	c := e.client(workers, out.middleware(), dispatch)

	id := insert(t, c, ShipArgs{SKU: "widget", Qty: 3})
	e1 := <-started
	time.Sleep(1100 * time.Millisecond)
	exec := riverdatabasesql.New(e.fenced).GetExecutor()
	if _, err := exec.JobRescueMany(t.Context(), &riverdriver.JobRescueManyParams{
		ID: []int64{id}, Error: [][]byte{[]byte(`{"error":"Stuck job rescued by JobRescuer"}`)},
		FinalizedAt: []*time.Time{nil}, ScheduledAt: []time.Time{time.Now()}, State: []string{string(rivertype.JobStateAvailable)},
		StuckHorizon: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	e2 := <-started
	for len(w.all()) < 1 { // the successor has written
		time.Sleep(10 * time.Millisecond)
	}
	close(wake1) // the first execution wakes while the successor still runs
	deadline := time.Now().Add(10 * time.Second)
	for len(out.of(id)) < 2 { // its outcome, and at least one redelivery that found the claim held
		if time.Now().After(deadline) {
			t.Fatalf("outcomes %v after 10s", out.of(id))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := e.jobState(id); st == rivertype.JobStateCancelled || st == rivertype.JobStateCompleted {
		t.Fatalf("job %s while its successor is still running", st)
	}
	close(wake2)
	e.waitState(id, rivertype.JobStateCompleted)

	errs := out.of(id)
	var sup *sqlfenceriver.SupersededError
	if !errors.As(errs[0], &sup) || sup.Epoch != e1 {
		t.Errorf("first outcome %v; want the superseded execution's (epoch %d)", errs[0], e1)
	}
	if errs[len(errs)-1] != nil {
		t.Errorf("last outcome %v; want nil", errs[len(errs)-1])
	}
	if runs := w.all(); len(runs) != 2 {
		t.Errorf("handler ran %d times; want twice (the paused execution and its successor)", len(runs))
	}
	if qty, epoch := e.stock("widget"); qty != 7 || epoch != e2 {
		t.Errorf("widget = %d, epoch %d; want 7 (shipped once), %d", qty, epoch, e2)
	}
	if ce, status := e.claimRow(sqlfenceriver.DefaultKey(&rivertype.JobRow{ID: id})); ce != e2 || status != "done" {
		t.Errorf("claim row: epoch %d, %q; want %d, done", ce, status, e2)
	}
}
