package sqlfenceriver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testPolicy protects inventory and declares the ledger's claim table. River's
// own tables are not protected: River's statements pass through sqlfence
// unchanged, judged by its allowlist.
const testPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
claims:
  - table: sqlfence_claims
safe_functions:
  - river_job_state_in_bitmask   # River's IMMUTABLE SQL function (migration 006): reads a bit
`

// env is one test's database: a plain handle (migrations, inspection), the
// sqlfence handle River and the handlers use, and what went wrong in River.
type env struct {
	t      *testing.T
	cfg    *pgx.ConnConfig
	plain  *sql.DB
	fenced *sql.DB
	logs   *logSink
}

func newEnv(t *testing.T, ledger *claim.Ledger) *env {
	t.Helper()
	dsn := pgtest.NewDB(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cfg: cfg, logs: newLogSink(t)}
	e.plain = stdlib.OpenDB(*cfg)
	t.Cleanup(func() { e.plain.Close() })

	// River's tables come from River's migrator, through the plain handle: a
	// fenced connection refuses DDL unless the policy says ddl: allow.
	migrator, err := rivermigrate.New(riverdatabasesql.New(e.plain), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(t.Context(), rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	if ledger == nil {
		if ledger, err = claim.NewLedger(claim.LedgerConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ddl := range []string{
		ledger.Schema(),
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO inventory (sku, quantity) VALUES ('widget', 10), ('gadget', 10)`,
	} {
		if _, err := e.plain.ExecContext(t.Context(), ddl); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := sqlfence.ParsePolicy([]byte(testPolicy), "test policy")
	if err != nil {
		t.Fatal(err)
	}
	e.fenced = sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol, sqlfence.WithLogger(e.logs.logger())))
	t.Cleanup(func() { e.fenced.Close() })
	return e
}

// stock reads a row of inventory through the plain handle.
func (e *env) stock(sku string) (qty int, epoch int64) {
	e.t.Helper()
	if err := e.plain.QueryRowContext(e.t.Context(), `SELECT quantity, writer_epoch FROM inventory WHERE sku = $1`, sku).Scan(&qty, &epoch); err != nil {
		e.t.Fatal(err)
	}
	return qty, epoch
}

// claimRow reads the ledger row of a job.
func (e *env) claimRow(key string) (epoch int64, status string) {
	e.t.Helper()
	err := e.plain.QueryRowContext(e.t.Context(), `SELECT lease_epoch, status FROM sqlfence_claims WHERE job_id = $1`, key).Scan(&epoch, &status)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		e.t.Fatal(err)
	}
	return epoch, status
}

// jobState reads River's row of a job.
func (e *env) jobState(id int64) rivertype.JobState {
	e.t.Helper()
	var state string
	if err := e.plain.QueryRowContext(e.t.Context(), `SELECT state FROM river_job WHERE id = $1`, id).Scan(&state); err != nil {
		e.t.Fatal(err)
	}
	return rivertype.JobState(state)
}

// client starts a River client on the sqlfence handle through riverdatabasesql,
// with the given worker middleware, and stops it when the test ends.
func (e *env) client(workers *river.Workers, middleware ...rivertype.Middleware) *river.Client[*sql.Tx] {
	e.t.Helper()
	c, err := river.NewClient(riverdatabasesql.New(e.fenced), &river.Config{
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond, // database/sql has no LISTEN: River polls
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

// quickRetry retries a failed job after 50ms instead of River's backoff.
type quickRetry struct{}

func (quickRetry) NextRetry(*rivertype.JobRow) time.Time {
	return time.Now().Add(50 * time.Millisecond)
}

// waitState waits until River's row of job id is in state.
func (e *env) waitState(id int64, state rivertype.JobState) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := e.jobState(id)
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %d is %s after 20s; want %s", id, got, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ShipArgs is the test job: ship Qty of SKU.
type ShipArgs struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func (ShipArgs) Kind() string { return "ship" }

// run is one execution of ShipWorker as the handler saw it.
type run struct {
	jobID    int64
	attempt  int
	epoch    int64 // from the handler's context; 0 without one
	hasEpoch bool
	err      error // the write's error
	ctx      context.Context
}

// shipWorker decrements inventory through the sqlfence handle, under the
// context River (and the middleware) give it.
type shipWorker struct {
	river.WorkerDefaults[ShipArgs]
	db *sql.DB
	// before runs before the write: tests block executions here.
	before func(ctx context.Context, job *river.Job[ShipArgs])
	// after runs after the write.
	after func(ctx context.Context, job *river.Job[ShipArgs])
	// onErr decides what the handler returns when the write failed; nil
	// returns the error.
	onErr func(err error) error

	mu   sync.Mutex
	runs []run
}

func (w *shipWorker) Work(ctx context.Context, job *river.Job[ShipArgs]) error {
	if w.before != nil {
		w.before(ctx, job)
	}
	epoch, ok := sqlfence.EpochFrom(ctx)
	_, err := w.db.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, job.Args.SKU, job.Args.Qty)
	w.mu.Lock()
	w.runs = append(w.runs, run{jobID: job.ID, attempt: job.Attempt, epoch: epoch, hasEpoch: ok, err: err, ctx: ctx})
	w.mu.Unlock()
	if w.after != nil {
		w.after(ctx, job)
	}
	if err != nil && w.onErr != nil {
		return w.onErr(err)
	}
	return err
}

func (w *shipWorker) all() []run {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]run(nil), w.runs...)
}

// outcomes records what the middleware under it returned to River, per
// execution: install it first (outermost).
type outcomes struct {
	mu   sync.Mutex
	errs map[int64][]error
}

func (o *outcomes) middleware() rivertype.Middleware {
	return river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
		err := doInner(ctx)
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.errs == nil {
			o.errs = map[int64][]error{}
		}
		o.errs[job.ID] = append(o.errs[job.ID], err)
		return err
	})
}

func (o *outcomes) of(id int64) []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]error(nil), o.errs[id]...)
}

// logSink forwards River's and sqlfence's logs to the test and keeps the
// errors, so that a statement sqlfence refuses inside River's machinery
// (which River only logs) fails the test.
type logSink struct {
	t      *testing.T
	mu     sync.Mutex
	errs   []string
	closed atomic.Bool
}

func newLogSink(t *testing.T) *logSink {
	s := &logSink{t: t}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed.Store(true)
		for _, e := range s.errs {
			if strings.Contains(e, "sqlfence") || strings.Contains(e, "refused") {
				t.Errorf("logged: %s", e)
			}
		}
	})
	return s
}

func (s *logSink) logger() *slog.Logger { return slog.New(sinkHandler{s: s}) }

type sinkHandler struct {
	s     *logSink
	attrs []slog.Attr
}

func (h sinkHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h sinkHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return sinkHandler{s: h.s, attrs: append(append([]slog.Attr(nil), h.attrs...), a...)}
}
func (h sinkHandler) WithGroup(string) slog.Handler { return h }
func (h sinkHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	line := b.String()
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.closed.Load() {
		return nil
	}
	if r.Level >= slog.LevelError {
		h.s.errs = append(h.s.errs, line)
	}
	h.s.t.Log(line)
	return nil
}
