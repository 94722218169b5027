package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// DB is the arbiter a claim runs on: *sql.DB, *sql.Conn and *sql.Tx all
// satisfy it, through the plain pgx driver or through sqlfence (claim tables
// are not protected tables, so sqlfence sends their statements unchanged).
//
// The Lease keeps using the DB it was claimed on for renewals, Complete and
// Release, so give the claim a *sql.DB (or a *sql.Conn you keep open). A
// claim made in a *sql.Tx is only visible once that transaction commits, and
// its renewals would run inside it: use a transaction for the claim only when
// the claim has to be atomic with something else, and disable the keeper.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ DB = (*sql.DB)(nil)
	_ DB = (*sql.Conn)(nil)
	_ DB = (*sql.Tx)(nil)
)

// EpochSource is where a claim's epoch comes from.
type EpochSource uint8

const (
	// GlobalEpoch takes every epoch from one PostgreSQL sequence, so epochs of
	// different jobs are comparable: a row written by any job at epoch 9 fences
	// every execution whose claim is older than 9. It is the default because
	// it is sound whichever jobs write a row. The price: a newer claim's write
	// fences an older claim that is still valid; that execution gets ErrFenced,
	// releases its job, and the job is retried under a fresh, higher epoch.
	GlobalEpoch EpochSource = iota
	// PerJobEpoch increments a counter on the job's own row, as in the
	// classic lease-and-epoch job claim. Epochs of different jobs are unrelated, so
	// it is sound only when each protected row is written by the executions
	// of one job: job A at epoch 5 writes a row, and job B's first claim
	// (epoch 1) is fenced from that row forever, while a stale execution of
	// job C at epoch 9 still overwrites it.
	PerJobEpoch
)

func (s EpochSource) String() string {
	switch s {
	case GlobalEpoch:
		return "GlobalEpoch"
	case PerJobEpoch:
		return "PerJobEpoch"
	}
	return fmt.Sprintf("EpochSource(%d)", uint8(s))
}

// DefaultSequence is the sequence GlobalEpoch draws from unless configured
// otherwise. Tables that share it have comparable epochs.
const DefaultSequence = "sqlfence_epoch"

// DefaultLease is the lease a claim gets unless configured otherwise.
const DefaultLease = 30 * time.Second

var (
	// ErrNoJob: ClaimNext found no job that is pending and available, or
	// claimed with an expired lease.
	ErrNoJob = errors.New("claim: no job to claim")
	// ErrNotClaimable: the job asked for is held by a live claim, not yet
	// available, done, or missing. The concrete error is *NotClaimableError.
	ErrNotClaimable = errors.New("claim: job not claimable")
	// ErrDone: the job asked for was completed. It also matches
	// ErrNotClaimable. For a queue that redelivers a message whose
	// acknowledgement was lost, it means: acknowledge it, do not run it again.
	ErrDone = errors.New("claim: job is done")
	// ErrLeaseLost is the cause a Lease's context is cancelled with when the
	// lease could not be renewed. The concrete cause is *LostError; it also
	// matches sqlfence.ErrFenced when the renewal found the job claimed again.
	ErrLeaseLost = errors.New("claim: lease lost")
	// ErrEnded is the cause a Lease's context is cancelled with by Complete,
	// Release and Stop, and the error of a second Complete or Release.
	ErrEnded = errors.New("claim: lease ended")
)

// NotClaimableError says why a given job could not be claimed.
type NotClaimableError struct {
	Table       string    // the jobs or claim table
	JobID       any       // the job asked for
	Found       bool      // the job has a row
	Status      string    // the row's status
	Epoch       int64     // the row's epoch: the last claim's
	ExpiresAt   time.Time // the last claim's lease end (zero if none)
	AvailableAt time.Time // when a pending job becomes claimable (zero if not applicable)
	Now         time.Time // the arbiter's clock when it refused
	// Locked: the last claim's lease ran out, but a transaction of that claim is
	// still open (its claim-checked writes lock the job's row until they commit or
	// roll back). A takeover does not wait for it (JobsConfig.TakeoverWait:
	// waited that long): retry the claim shortly.
	Locked bool
}

func (e *NotClaimableError) Error() string {
	var what, fix string
	switch {
	case e.Locked:
		what = fmt.Sprintf("its last claim (epoch %d) ran out of lease but still has a transaction open on the job's row", e.Epoch)
		fix = "a takeover waits until that transaction commits or rolls back, so that it comes after the old claim's writes: retry the claim shortly"
	case !e.Found:
		what, fix = "not found", "check the job id"
	case e.Status == statusDone:
		what, fix = fmt.Sprintf("done at epoch %d", e.Epoch), "its work is complete: acknowledge the message instead of running it again"
	case e.Status == statusClaimed:
		what = fmt.Sprintf("claimed at epoch %d until %s (%s from now)", e.Epoch, e.ExpiresAt.Format(time.RFC3339Nano), e.ExpiresAt.Sub(e.Now).Round(time.Millisecond))
		fix = "another execution holds it; it becomes claimable when that lease expires"
	case !e.AvailableAt.IsZero():
		what = fmt.Sprintf("%s, available at %s (%s from now)", e.Status, e.AvailableAt.Format(time.RFC3339Nano), e.AvailableAt.Sub(e.Now).Round(time.Millisecond))
		fix = "claim it once it is available"
	default:
		what, fix = fmt.Sprintf("%s at epoch %d", e.Status, e.Epoch), "wait until it is claimable"
	}
	return fmt.Sprintf("claim: job %v in table %s is not claimable: %s; %s", e.JobID, e.Table, what, fix)
}

// Is makes the error match ErrNotClaimable, and ErrDone for a completed job.
func (e *NotClaimableError) Is(target error) bool {
	return target == ErrNotClaimable || target == ErrDone && e.Found && e.Status == statusDone
}

// LostError is the cause of a Lease context cancelled because the lease could
// not be kept.
type LostError struct {
	Table string
	JobID any
	Epoch int64
	// Err is why: a *sqlfence.Error matching sqlfence.ErrFenced when a
	// renewal found the job claimed again (or completed, or gone); otherwise
	// the last failed renewal's error, the lease having run out meanwhile.
	Err error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("claim: lease lost: job %v in table %s, epoch %d: %v; stop the handler: the job may already run elsewhere under a newer epoch",
		e.JobID, e.Table, e.Epoch, e.Err)
}

func (e *LostError) Unwrap() error        { return e.Err }
func (e *LostError) Is(target error) bool { return target == ErrLeaseLost }

// Status values the helpers write. The claim table and a jobs table created
// from Schema have CHECK constraints allowing exactly these.
const (
	statusPending  = "pending"
	statusClaimed  = "claimed"
	statusDone     = "done"
	statusReleased = "released"
)

// table is what a Lease needs from the table it was claimed in: the
// statements that renew, complete, release and inspect one claim. Every one
// of them is conditional on the claim still being this one (the row's epoch
// is ours and its status is claimed), which is what makes them fenced.
type table struct {
	kind       string // for messages: "jobs table", "claim table"
	name       name
	keyCol     name // the job's key column, for the claim check (sqlfence.WithClaim)
	epochCol   name // the epoch column
	lease      time.Duration
	renewEvery time.Duration

	renewSQL    string // $1 id, $2 epoch, $3 lease µs → RETURNING expires_at
	completeSQL string // $1 id, $2 epoch
	releaseSQL  string // $1 id, $2 epoch, $3 retry-after µs
	inspectSQL  string // $1 id → status, epoch, expires_at, available_at, now()
}

// leaseConfig resolves the settings Jobs and Ledger share.
func leaseConfig(t *table, epochs EpochSource, sequence string, lease, renewEvery time.Duration) (seq name, err error) {
	switch epochs {
	case GlobalEpoch, PerJobEpoch:
	default:
		return name{}, fmt.Errorf("claim: unknown epoch source %v; use GlobalEpoch or PerJobEpoch", epochs)
	}
	if sequence == "" {
		sequence = DefaultSequence
	}
	if seq, err = parseName("sequence", sequence, 2); err != nil {
		return name{}, err
	}
	switch {
	case lease == 0:
		lease = DefaultLease
	case lease < time.Millisecond:
		return name{}, fmt.Errorf("claim: lease %v is too short; leases are at least 1ms (default %v)", lease, DefaultLease)
	}
	switch {
	case renewEvery == 0:
		renewEvery = lease / 3
	case renewEvery >= lease:
		return name{}, fmt.Errorf("claim: RenewEvery %v is not shorter than the lease %v: the lease would run out between renewals; use about a third of it", renewEvery, lease)
	}
	t.lease, t.renewEvery = lease, renewEvery
	return seq, nil
}

// nextvalSQL is the expression that draws a global epoch. The sequence must
// keep CACHE 1 (Schema creates it so): with a per-session cache, a session
// can hand out a value lower than one another session already used, and an
// epoch could go backwards.
func nextvalSQL(seq name) string { return "nextval(" + sqlident.Literal(seq.sql) + "::regclass)" }

func micros(d time.Duration) int64 { return d.Microseconds() }

// notHeld explains an UPDATE of op that found no row still holding the claim
// (id, epoch). The 0-row result is the arbiter's answer; the inspection only
// words it, so the error matches sqlfence.ErrFenced even when the inspection
// fails.
func (t *table) notHeld(ctx context.Context, db DB, op, stmt string, id any, epoch int64) error {
	e := &sqlfence.Error{Kind: sqlfence.ErrFenced, Table: t.name.String(), Epoch: epoch, Statement: stmt,
		Fix: "this execution no longer holds the job: stop the handler and do not retry with this epoch"}
	var (
		status       string
		stored       int64
		exp, avail   sql.NullTime
		now          time.Time
		inspectError error
	)
	inspectError = db.QueryRowContext(claimctx.With(ctx), t.inspectSQL, id).Scan(&status, &stored, &exp, &avail, &now)
	switch {
	case errors.Is(inspectError, sql.ErrNoRows):
		e.Reason = fmt.Sprintf("%s refused: job %v is no longer in the %s", op, id, t.kind)
	case inspectError != nil:
		e.Reason = fmt.Sprintf("%s refused: no row of job %v holds epoch %d as claimed (inspecting the row failed: %v)", op, id, epoch, inspectError)
	case stored > epoch:
		e.StoredEpoch, e.HasStored = stored, true
		e.Reason = fmt.Sprintf("%s refused: job %v was claimed again at epoch %d (now %s) after this claim's lease ran out", op, id, stored, status)
	case stored == epoch:
		e.StoredEpoch, e.HasStored = stored, true
		e.Reason = fmt.Sprintf("%s refused: job %v is already %s at this claim's epoch", op, id, status)
		e.Fix = "the claim was already completed or released; a lease ends once"
	default:
		e.StoredEpoch, e.HasStored = stored, true
		e.Reason = fmt.Sprintf("%s refused: job %v holds epoch %d, below this claim's: its epoch was moved back behind the helpers' back (a restore, a test, a manual fix)", op, id, stored)
		e.Fix = "audit the epochs (sqlfence audit) before running more jobs: a lower epoch lets stale executions write"
	}
	return e
}

// Lease is one execution's hold on one job: the claim's epoch, the handler's
// context that carries it, and the keeper that renews the lease.
//
// The context from Context carries the epoch (sqlfence.WithEpoch) and is
// cancelled when the execution must stop, with a cause telling why:
//
//   - a write through sqlfence was fenced: the *sqlfence.Error (ErrFenced);
//   - the lease could not be renewed: a *LostError (ErrLeaseLost, and
//     ErrFenced too when the job was claimed again);
//   - Complete, Release or Stop was called: ErrEnded;
//   - the context given to the claim was cancelled: its cause.
//
// The fence and the keeper cancel through the same function, so a handler
// checks one context. Call Complete or Release when the handler returns, and
// defer Stop so a panic or an early return cannot leave the keeper renewing a
// job nobody works on.
type Lease struct {
	JobID any   // the job's id as the database returned it; pass it back unchanged
	Epoch int64 // the claim's epoch: the fencing token of this execution

	t      *table
	db     DB
	ctx    context.Context
	cancel context.CancelCauseFunc

	stopKeeper func() // stops the keeper and waits for it; idempotent

	mu        sync.Mutex
	expiresAt time.Time // the arbiter's lease end, from the last claim or renewal
	deadline  time.Time // local, monotonic: before expiresAt whatever the clocks say
	ended     bool
}

// newLease starts the handler's context and the keeper for a claim the
// arbiter granted. sentAt is when the claim statement was sent: the server
// computed the lease from its clock at some moment after that, so sentAt +
// lease, measured on this process's monotonic clock, never falls after the
// lease's real end, whatever the two clocks read.
func newLease(parent context.Context, t *table, db DB, id any, epoch int64, expiresAt, sentAt time.Time) *Lease {
	base, cancel := context.WithCancelCause(parent)
	l := &Lease{
		JobID: id, Epoch: epoch, t: t, db: db, cancel: cancel,
		ctx: sqlfence.OnFenced(sqlfence.WithClaim(base, sqlfence.Claim{
			Table: t.name.sql, KeyColumn: t.keyCol.sql, EpochColumn: t.epochCol.sql, Key: id, Epoch: epoch,
		}), cancel),
		expiresAt: expiresAt, deadline: sentAt.Add(t.lease),
		stopKeeper: func() {},
	}
	if t.renewEvery > 0 {
		kctx, kcancel := context.WithCancel(l.ctx)
		done := make(chan struct{})
		go l.keep(kctx, done)
		l.stopKeeper = sync.OnceFunc(func() { kcancel(); <-done })
	}
	return l
}

// Context returns the handler's context: it carries the epoch, and is
// cancelled when the execution must stop (see Lease).
func (l *Lease) Context() context.Context { return l.ctx }

// ExpiresAt returns the lease's end on the arbiter's clock, as of the last
// claim or renewal.
func (l *Lease) ExpiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expiresAt
}

// keep renews the lease every renewEvery. A renewal the arbiter refuses ends
// the lease at once; one that fails (network, server restart) is retried
// until the lease would run out, and only then ends it: the handler should not
// stop for a blip, but must stop before a successor can take over.
func (l *Lease) keep(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	timer := time.NewTimer(l.t.renewEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		l.mu.Lock()
		deadline := l.deadline
		l.mu.Unlock()
		rctx, cancel := context.WithDeadline(ctx, deadline)
		err := l.renew(rctx)
		cancel()
		switch {
		case err == nil:
			timer.Reset(l.t.renewEvery)
		case ctx.Err() != nil:
			return
		case errors.Is(err, sqlfence.ErrFenced):
			return // renew has cancelled the handler
		default:
			left := time.Until(deadline)
			if left <= 0 {
				l.cancel(&LostError{Table: l.t.name.String(), JobID: l.JobID, Epoch: l.Epoch,
					Err: fmt.Errorf("the lease ran out without a successful renewal; last renewal: %w", err)})
				return
			}
			timer.Reset(min(l.t.renewEvery, time.Second, left))
		}
	}
}

// Renew extends the lease now, if the claim is still this one. The keeper
// does this on its own; call Renew when it is disabled (RenewEvery < 0). A
// renewal refused because the job was claimed again returns an error matching
// sqlfence.ErrFenced and cancels the handler's context.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.checkOpen("renewal"); err != nil {
		return err
	}
	return l.renew(ctx)
}

// checkOpen refuses an operation on a lease that Complete, Release or Stop
// ended: its context is cancelled and its keeper gone, so nothing the
// operation did could reach a handler.
func (l *Lease) checkOpen(op string) error {
	l.mu.Lock()
	ended := l.ended
	l.mu.Unlock()
	if ended {
		return fmt.Errorf("%w: job %v in table %s, epoch %d: %s after the lease was completed, released or stopped", ErrEnded, l.JobID, l.t.name, l.Epoch, op)
	}
	return nil
}

func (l *Lease) renew(ctx context.Context) error {
	sent := time.Now()
	var exp time.Time
	err := l.db.QueryRowContext(claimctx.With(ctx), l.t.renewSQL, l.JobID, l.Epoch, micros(l.t.lease)).Scan(&exp)
	if errors.Is(err, sql.ErrNoRows) {
		err = l.t.notHeld(ctx, l.db, "renewal", l.t.renewSQL, l.JobID, l.Epoch)
		l.cancel(&LostError{Table: l.t.name.String(), JobID: l.JobID, Epoch: l.Epoch, Err: err})
		return err
	}
	if err != nil {
		return fmt.Errorf("claim: renewing job %v in table %s, epoch %d: %w", l.JobID, l.t.name, l.Epoch, err)
	}
	l.mu.Lock()
	l.expiresAt = exp
	if d := sent.Add(l.t.lease); d.After(l.deadline) {
		l.deadline = d
	}
	l.mu.Unlock()
	return nil
}

// Complete marks the job done, if the claim is still this one, and ends the
// lease. A superseded claim's completion is refused with an error matching
// sqlfence.ErrFenced: the successor owns the job. Use a context that is not
// the handler's: that one may already be cancelled.
//
// A completion that gets no answer (a network error) leaves the lease open
// with its keeper stopped: retry Complete while the lease lasts, or Stop.
func (l *Lease) Complete(ctx context.Context) error {
	return l.finish(ctx, "completion", l.t.completeSQL, l.JobID, l.Epoch)
}

// Release gives the job back: it becomes claimable again after retryAfter,
// under a new epoch. Like Complete it is refused, with an error matching
// sqlfence.ErrFenced, when the claim is no longer this one. Release is how an
// execution fenced under GlobalEpoch hands its job to a fresh claim.
func (l *Lease) Release(ctx context.Context, retryAfter time.Duration) error {
	if retryAfter < 0 {
		retryAfter = 0
	}
	return l.finish(ctx, "release", l.t.releaseSQL, l.JobID, l.Epoch, micros(retryAfter))
}

// finish runs a completion or release and ends the lease. A statement that
// fails without an answer (a network error) leaves the lease open, the keeper
// stopped, so that it can be retried while the claim is still this one.
func (l *Lease) finish(ctx context.Context, op, stmt string, args ...any) error {
	if err := l.checkOpen(op); err != nil {
		return err
	}
	l.stopKeeper()
	err := l.exec(ctx, l.db, op, stmt, args...)
	if err != nil && !errors.Is(err, sqlfence.ErrFenced) {
		return err
	}
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	if err != nil {
		l.cancel(err)
		return err
	}
	l.cancel(ErrEnded)
	return nil
}

// CompleteIn marks the job done inside db, typically the transaction that
// holds the handler's writes: they then commit together or not at all, and a
// superseded claim's completion — refused with an error matching
// sqlfence.ErrFenced — takes its writes down with it when the transaction is
// rolled back. This closes the gap between "the handler's writes are in" and
// "the job is marked done", where a lease can run out and a successor repeat
// the work.
//
// CompleteIn stops the keeper, whose renewals would otherwise wait on the
// row lock the transaction now holds, but leaves the context alone: the
// transaction may have been begun under it. Commit, then Stop. If the
// transaction rolls back, the claim is still held: Release it, or Stop and
// let the lease run out.
func (l *Lease) CompleteIn(ctx context.Context, db DB) error {
	if err := l.checkOpen("completion"); err != nil {
		return err
	}
	l.stopKeeper()
	return l.exec(ctx, db, "completion", l.t.completeSQL, l.JobID, l.Epoch)
}

func (l *Lease) exec(ctx context.Context, db DB, op, stmt string, args ...any) error {
	res, err := db.ExecContext(claimctx.With(ctx), stmt, args...)
	if err != nil {
		return fmt.Errorf("claim: %s of job %v in table %s, epoch %d: %w", op, l.JobID, l.t.name, l.Epoch, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("claim: %s of job %v in table %s, epoch %d: %w", op, l.JobID, l.t.name, l.Epoch, err)
	}
	if n == 0 {
		return l.t.notHeld(ctx, db, op, stmt, l.JobID, l.Epoch)
	}
	return nil
}

// Stop ends the lease without touching the job: the keeper stops and the
// handler's context is cancelled with ErrEnded. The claim stays in the table
// until its lease runs out, and then another worker takes the job over. It
// is safe to call at any time and more than once: defer it right after the
// claim.
func (l *Lease) Stop() {
	l.stopKeeper()
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.cancel(ErrEnded)
}
