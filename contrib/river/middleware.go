package sqlfenceriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// Config configures the middleware. DB is required; the rest have defaults.
type Config struct {
	// DB is the arbiter the claims run on: the database that holds the claim
	// table. The sqlfence *sql.DB the handlers write through works (claim
	// tables are not protected tables; declare the table under claims: in the
	// policy), and so does a plain one.
	DB claim.DB

	// Ledger is the claim table. Default: claim.NewLedger(claim.LedgerConfig{})
	// — table sqlfence_claims, epochs from the global sequence sqlfence_epoch,
	// a 30s lease renewed every 10s. Create its table with Schema, in a
	// migration. Keep GlobalEpoch: River's jobs share rows, and only epochs
	// drawn from one sequence are comparable across jobs.
	Ledger *claim.Ledger

	// Key names a job's claim in the ledger. Default "river:<job id>": every
	// execution of a job claims the same row, so a newer execution supersedes
	// an older one, two executions never hold the job at once, and a job whose
	// claim was completed is not run again when River delivers it again. Use a
	// key of your own when several River schemas share one claim table
	// ("billing:river:<id>"), or to key by a business identity.
	Key func(job *rivertype.JobRow) string

	// JobTimeout is the longest a handler may run: set it to River's
	// Config.JobTimeout (or the worker's Timeout when that is longer).
	// Default river.JobTimeoutDefault (1 minute); -1 means no limit. When
	// JobTimeout plus StuckThreshold has passed and the handler is still
	// running, the middleware stops renewing its claim (and cancels the
	// handler's context): a handler that ignores its cancelled context must
	// not hold the job for ever, or the execution River starts after rescuing
	// the job could never claim it.
	JobTimeout time.Duration
	// StuckThreshold is River's Config.JobStuckThreshold. Default
	// river.JobStuckThresholdDefault (10s), as River's.
	StuckThreshold time.Duration

	// FencedRetry is how long a job waits (river.JobSnooze, which does not
	// count as an attempt) before it runs again after a protected write was
	// fenced by another job's newer epoch while this execution still held its
	// claim. Default 1s. Zero means the default; use a negative value for an
	// immediate retry.
	FencedRetry time.Duration

	// Logger receives one line per superseded execution, per delivery skipped
	// because the job is done or held, and per lease lost. Default
	// slog.Default().
	Logger *slog.Logger
}

// Middleware claims every River job execution it wraps on the arbiter. It is a
// rivertype.WorkerMiddleware: install it for every job kind through
// river.Config.Middleware, or for one worker through the worker's Middleware
// method. Create it with New.
type Middleware struct {
	river.MiddlewareDefaults

	db             claim.DB
	ledger         *claim.Ledger
	key            func(*rivertype.JobRow) string
	jobTimeout     time.Duration
	stuckThreshold time.Duration
	fencedRetry    time.Duration
	logger         *slog.Logger
}

var _ rivertype.WorkerMiddleware = (*Middleware)(nil)

// New checks cfg and returns the middleware.
func New(cfg Config) (*Middleware, error) {
	if cfg.DB == nil {
		return nil, errors.New("sqlfenceriver: Config.DB is nil; give the database that holds the claim table (the sqlfence *sql.DB works)")
	}
	m := &Middleware{db: cfg.DB, ledger: cfg.Ledger, key: cfg.Key, logger: cfg.Logger}
	if m.ledger == nil {
		l, err := claim.NewLedger(claim.LedgerConfig{})
		if err != nil {
			return nil, err
		}
		m.ledger = l
	}
	if m.key == nil {
		m.key = DefaultKey
	}
	if m.logger == nil {
		m.logger = slog.Default()
	}
	switch {
	case cfg.JobTimeout == 0:
		m.jobTimeout = river.JobTimeoutDefault
	case cfg.JobTimeout < -1:
		return nil, fmt.Errorf("sqlfenceriver: JobTimeout %v: use a positive duration, or -1 for no limit", cfg.JobTimeout)
	default:
		m.jobTimeout = cfg.JobTimeout
	}
	switch {
	case cfg.StuckThreshold == 0:
		m.stuckThreshold = river.JobStuckThresholdDefault
	case cfg.StuckThreshold < 0:
		return nil, fmt.Errorf("sqlfenceriver: StuckThreshold %v is negative", cfg.StuckThreshold)
	default:
		m.stuckThreshold = cfg.StuckThreshold
	}
	switch {
	case cfg.FencedRetry == 0:
		m.fencedRetry = time.Second
	case cfg.FencedRetry > 0:
		m.fencedRetry = cfg.FencedRetry
	}
	return m, nil
}

// DefaultKey is the claim key of a job unless Config.Key says otherwise:
// "river:" and the job's id.
func DefaultKey(job *rivertype.JobRow) string { return "river:" + strconv.FormatInt(job.ID, 10) }

// Schema returns the DDL of the ledger's claim table and sequence, for a
// migration (a fenced connection refuses DDL unless the policy allows it).
func (m *Middleware) Schema() string { return m.ledger.Schema() }

// Ledger returns the ledger the middleware claims in.
func (m *Middleware) Ledger() *claim.Ledger { return m.ledger }

type execKey struct{}

// execution is one claimed River execution, reachable from the handler's
// context.
type execution struct {
	lease *claim.Lease

	mu          sync.Mutex
	completedIn bool // the handler completed the claim inside its own transaction
}

// LeaseFromContext returns the claim of the River execution the context belongs
// to: its Epoch (the epoch sqlfence stamps on the handler's writes), JobID
// (the ledger key), and ExpiresAt. It is false outside a handler the middleware
// wraps.
func LeaseFromContext(ctx context.Context) (*claim.Lease, bool) {
	ex, ok := ctx.Value(execKey{}).(*execution)
	if !ok {
		return nil, false
	}
	return ex.lease, true
}

// CompleteIn completes the execution's claim inside db — the transaction that
// holds the handler's writes — so that the writes and "this job is done"
// commit together or not at all. A superseded execution's completion is
// refused with an error matching sqlfence.ErrFenced, and rolling the
// transaction back takes its writes with it. Commit before returning nil from
// the handler; the middleware then only ends the lease. Without CompleteIn the
// middleware completes the claim after the handler returns, and a lease lost
// between the commit and that completion makes River's next delivery run the
// job again.
func CompleteIn(ctx context.Context, db claim.DB) error {
	ex, ok := ctx.Value(execKey{}).(*execution)
	if !ok {
		return errors.New("sqlfenceriver: CompleteIn outside a job handler wrapped by the sqlfenceriver middleware")
	}
	if err := ex.lease.CompleteIn(ctx, db); err != nil {
		return err
	}
	ex.mu.Lock()
	ex.completedIn = true
	ex.mu.Unlock()
	return nil
}

// Work claims the execution, runs the handler under the claim's context, and
// turns the outcome into River's:
//
//   - claimed: the handler runs with a context that carries the epoch
//     (sqlfence.WithEpoch) and the lease (LeaseFromContext), and that is
//     cancelled when a write is fenced, the lease is lost, or the job's time
//     is up;
//   - the handler returned nil: the claim is completed and River completes
//     the job;
//   - a protected write was fenced while this execution still held its claim
//     (another job's newer epoch wrote the row first, the price of comparable
//     epochs): the claim is released and the job snoozes for FencedRetry, to
//     run again under a fresh epoch;
//   - the execution was superseded (a newer execution claimed the job after
//     this one's lease ran out; its write, renewal, completion or release was
//     fenced): the job is snoozed, not cancelled — see "Superseded executions"
//     in the package documentation;
//   - the lease ran out without a successful renewal: the handler's error is
//     returned, wrapped, and River retries the job;
//   - any other error (including river.JobCancel and river.JobSnooze): the
//     claim is released and the error goes to River unchanged.
//
// A delivery of a job whose claim was completed returns nil without running
// the handler; one whose claim is held by another live execution snoozes until
// that lease ends.
func (m *Middleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	key := m.key(job)
	lease, err := m.ledger.Claim(ctx, m.db, key)
	if err != nil {
		return m.notClaimed(ctx, job, key, err)
	}
	defer lease.Stop()
	ex := &execution{lease: lease}
	hctx := context.WithValue(lease.Context(), execKey{}, ex)

	var running sync.Mutex // held while the handler runs
	running.Lock()
	if m.jobTimeout > 0 {
		stuck := time.AfterFunc(m.jobTimeout+m.stuckThreshold, func() {
			if running.TryLock() { // the handler has returned: leave the lease to finish
				running.Unlock()
				return
			}
			m.logger.WarnContext(ctx, "sqlfenceriver: handler still running past its job timeout; no longer renewing its claim",
				slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.String("claim", key), slog.Int64("epoch", lease.Epoch))
			lease.Stop()
		})
		defer stuck.Stop()
	}
	herr := doInner(hctx)
	running.Unlock()
	return m.finish(ctx, job, ex, herr)
}

// notClaimed turns a refused claim into River's outcome.
func (m *Middleware) notClaimed(ctx context.Context, job *rivertype.JobRow, key string, err error) error {
	var nc *claim.NotClaimableError
	switch {
	case errors.Is(err, claim.ErrDone):
		// A previous execution completed the claim; River lost its own
		// completion (a crash, a rescue) and delivered the job again.
		m.logger.InfoContext(ctx, "sqlfenceriver: job already done under an earlier claim; completing without running it",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.String("claim", key))
		return nil
	case errors.As(err, &nc) && nc.Found:
		// Held by a live execution, or released with a retry delay: come back
		// when the claim can be taken.
		until := nc.ExpiresAt
		if nc.AvailableAt.After(until) {
			until = nc.AvailableAt
		}
		wait := max(until.Sub(nc.Now), 0) + 50*time.Millisecond
		m.logger.InfoContext(ctx, "sqlfenceriver: job held by another execution; snoozing until its claim can be taken",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.String("claim", key),
			slog.Int64("held_epoch", nc.Epoch), slog.Duration("snooze", wait))
		return river.JobSnooze(wait)
	}
	return fmt.Errorf("sqlfenceriver: claiming job %d (%s) as %q: %w", job.ID, job.Kind, key, err)
}

// finishTimeout bounds the completion or release after the handler returned.
const finishTimeout = 30 * time.Second

func (m *Middleware) finish(ctx context.Context, job *rivertype.JobRow, ex *execution, herr error) error {
	lease := ex.lease
	// The handler's and River's contexts may be cancelled by now; completion
	// and release still have to reach the arbiter, within a bound.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if herr == nil {
		ex.mu.Lock()
		done := ex.completedIn
		ex.mu.Unlock()
		if done {
			return nil
		}
		err := lease.Complete(bg)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, sqlfence.ErrFenced):
			return m.superseded(ctx, job, lease, err)
		}
		return fmt.Errorf("sqlfenceriver: job %d finished, but completing its claim failed; River retries it, and the retry runs once the claim's lease has ended: %w", job.ID, err)
	}

	cause := context.Cause(lease.Context())
	var lost *claim.LostError
	if errors.As(cause, &lost) {
		if errors.Is(lost, sqlfence.ErrFenced) {
			return m.superseded(ctx, job, lease, lost)
		}
		m.logger.WarnContext(ctx, "sqlfenceriver: lease lost; River retries the job",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.Int64("epoch", lease.Epoch), slog.Any("error", lost))
		return fmt.Errorf("sqlfenceriver: job %d: %w (handler: %w)", job.ID, lost, herr)
	}

	retryAfter := time.Duration(0)
	var snooze *rivertype.JobSnoozeError
	if errors.As(herr, &snooze) {
		retryAfter = snooze.Duration
	}
	rerr := lease.Release(bg, retryAfter)
	switch {
	case rerr == nil:
	case errors.Is(rerr, sqlfence.ErrFenced):
		return m.superseded(ctx, job, lease, errors.Join(herr, rerr))
	case errors.Is(rerr, claim.ErrEnded):
		// Stopped past the job timeout: the claim lapses with its lease.
		return herr
	default:
		m.logger.WarnContext(ctx, "sqlfenceriver: releasing the claim failed; the job can run again once its lease ends",
			slog.Int64("job_id", job.ID), slog.Int64("epoch", lease.Epoch), slog.Any("error", rerr))
		return herr
	}
	if errors.Is(herr, sqlfence.ErrFenced) || errors.Is(cause, sqlfence.ErrFenced) {
		// Still ours, so the fence came from another job's newer epoch: run
		// again under a fresh one.
		m.logger.InfoContext(ctx, "sqlfenceriver: write fenced by a newer claim of another job; released, running again under a fresh epoch",
			slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.Int64("epoch", lease.Epoch),
			slog.Duration("snooze", m.fencedRetry), slog.Any("error", herr))
		return river.JobSnooze(m.fencedRetry)
	}
	return herr
}

// superseded is the outcome of an execution a newer one replaced. It must not
// decide anything about the job: River applies a worker's result to the job
// row whenever the row is running — also when the execution running it is the
// successor. A JobCancel would cancel the job under the successor's feet (its
// completion or retry would then be ignored); a snooze only makes River
// deliver the job once more, and that delivery finds the successor's claim
// held (it snoozes), released (it runs the job) or done (it completes).
func (m *Middleware) superseded(ctx context.Context, job *rivertype.JobRow, lease *claim.Lease, err error) error {
	m.logger.WarnContext(ctx, "sqlfenceriver: execution superseded by a newer claim; it stops, and the job's outcome is left to the newer execution",
		slog.Int64("job_id", job.ID), slog.String("kind", job.Kind), slog.Int("attempt", job.Attempt),
		slog.Int64("epoch", lease.Epoch), slog.Any("error", err))
	return &SupersededError{JobID: job.ID, Epoch: lease.Epoch, Err: err, snooze: &rivertype.JobSnoozeError{Duration: m.fencedRetry}}
}

// SupersededError is what the middleware returns for an execution that a newer
// one replaced. It wraps a river.JobSnooze of FencedRetry (so River neither
// counts an attempt nor finalizes the job) and the error that showed the
// supersession, which matches sqlfence.ErrFenced.
type SupersededError struct {
	JobID int64
	Epoch int64 // the superseded claim's epoch
	Err   error // the fenced write, renewal, completion or release

	snooze *rivertype.JobSnoozeError
}

func (e *SupersededError) Error() string {
	return fmt.Sprintf("sqlfenceriver: job %d: execution at epoch %d superseded by a newer claim: %v", e.JobID, e.Epoch, e.Err)
}

// Unwrap returns the snooze River acts on and the error behind it.
func (e *SupersededError) Unwrap() []error { return []error{e.snooze, e.Err} }
