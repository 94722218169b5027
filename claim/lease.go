// The lease an execution holds: its context, the keeper that renews it, and the ways
// it ends (Complete, CompleteIn, Release, Stop).

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
)

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

	timeline int64 // the arbiter's write timeline when it granted the claim (0: unknown)

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
func newLease(parent context.Context, t *table, db DB, id any, epoch, timeline int64, expiresAt, sentAt time.Time) *Lease {
	base, cancel := context.WithCancelCause(parent)
	l := &Lease{
		JobID: id, Epoch: epoch, timeline: timeline, t: t, db: db, cancel: cancel,
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

// Err is err as the handler should judge it: once the lease's context has been
// cancelled, a statement cut short by the cancellation returns a bare
// context.Canceled, or sql.ErrTxDone for its rolled-back transaction (database/sql
// and pgx return the context's error, not its cause); Err adds the cause, so that
// after a fence errors.Is(lease.Err(err), sqlfence.ErrFenced) holds, after a lost
// lease ErrLeaseLost, after Complete, Release or Stop ErrEnded. An err that already
// carries the cause, or any while the context is live, is returned as it is; nil
// stays nil.
//
//	_, err := db.ExecContext(lease.Context(), `UPDATE …`)
//	if errors.Is(lease.Err(err), sqlfence.ErrFenced) { … }
func (l *Lease) Err(err error) error {
	if err == nil || l.ctx.Err() == nil {
		return err
	}
	cause := context.Cause(l.ctx)
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return &causedError{err: err, cause: cause}
}

// causedError is a statement's error with the cause of the context that cut it
// short.
type causedError struct{ err, cause error }

func (e *causedError) Error() string {
	return e.err.Error() + " (the lease's context was cancelled: " + e.cause.Error() + ")"
}

func (e *causedError) Unwrap() []error { return []error{e.cause, e.err} }

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
		case errors.Is(err, sqlfence.ErrFenced), errors.Is(err, ErrFailover):
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
	var (
		exp time.Time
		tl  sql.NullInt64
	)
	err := l.db.QueryRowContext(claimctx.With(ctx), l.t.renewSQL, l.JobID, l.Epoch, micros(l.t.lease)).Scan(&exp, &tl)
	if errors.Is(err, sql.ErrNoRows) {
		err = l.notHeld(ctx, l.db, "renewal", l.t.renewSQL)
		l.cancel(&LostError{Table: l.t.name.String(), JobID: l.JobID, Epoch: l.Epoch, Err: err})
		return err
	}
	if err != nil {
		return fmt.Errorf("claim [SF618]: renewing job %v in table %s, epoch %d: %w", l.JobID, l.t.name, l.Epoch, err)
	}
	if err := l.checkTimeline(ctx, "renewal", tl); err != nil {
		l.cancel(&LostError{Table: l.t.name.String(), JobID: l.JobID, Epoch: l.Epoch, Err: err})
		return err
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
	if err != nil && !errors.Is(err, sqlfence.ErrFenced) && !errors.Is(err, ErrFailover) {
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
		return fmt.Errorf("claim [SF618]: %s of job %v in table %s, epoch %d: %w", op, l.JobID, l.t.name, l.Epoch, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("claim [SF618]: %s of job %v in table %s, epoch %d: %w", op, l.JobID, l.t.name, l.Epoch, err)
	}
	if n == 0 {
		return l.notHeld(ctx, db, op, stmt)
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
