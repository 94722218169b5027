// Claims through a failover: epochs drawn on the arbiter's WAL timeline, commits that
// wait for the synchronous standby, claims whose outcome is unknown, and the alarm a
// lease raises when its arbiter went back in time.

package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Epochs and timelines
//
// With asynchronous replication a promoted standby has not received the old
// primary's last transactions: the claims among them are gone, and a sequence, a
// counter row or a job's lease_epoch on the new primary stands below the epochs the
// old primary handed out. Drawn as before, the new primary hands the same epochs out
// again, and a superseded execution's token is as good as its successor's.
//
// A promotion starts a new WAL timeline, one higher than every timeline the cluster
// had, and the timeline is readable in the statement that draws the epoch
// (pgcatalog.WriteTimelineSQL). So every source draws above the floor of its server's
// timeline, timeline << 32:
//
//	GlobalEpoch:  floor + nextval(sequence)
//	CounterEpoch: floor + the counter row's new value
//	PerJobEpoch:  greatest(lease_epoch + 1, floor + 1)
//
// Each source's own counter still grows by one per claim, so epochs grow on one
// timeline as before; and an epoch drawn on a later timeline exceeds every epoch of an
// earlier one by at least 2^32 minus the claims the lost WAL tail held. Epochs drawn
// before this format (below 2^32) are below every epoch drawn with it: rows and live
// claims keep working, and sqlfence audit tells the two apart.

// epochDraw is the expression that draws a claim's epoch from src; prev is the
// job's current epoch (PerJobEpoch), seq the sequence (GlobalEpoch). CounterEpoch's
// also needs counterCTE in front of the statement. legacy draws as before timelines,
// for the tests that show what the format prevents.
func epochDraw(src EpochSource, seq name, prev string, legacy bool) string {
	floor := pgcatalog.EpochFloorSQL
	switch {
	case legacy && src == GlobalEpoch:
		return nextvalSQL(seq)
	case legacy && src == CounterEpoch:
		return counterEpochSQL
	case legacy:
		return prev + " + 1"
	case src == GlobalEpoch:
		return "(" + floor + " + " + nextvalSQL(seq) + ")"
	case src == CounterEpoch:
		return "(" + floor + " + " + counterEpochSQL + ")"
	}
	return "greatest(" + prev + " + 1, " + floor + " + 1)"
}

// timelineSQL is the column the claim, renewal and claim check return: the timeline
// the arbiter writes on, which a lease compares with its claim's. Evaluated for the
// row the statement writes or locks, it first makes the transaction's commit wait for
// the synchronous standby (synchronous_commit on, local to the transaction): a claim,
// renewal, completion, step or outbox message that a failover can lose would hand its
// epoch out again, so none is acknowledged before the standby has it, whatever the
// session's own synchronous_commit says. Without a synchronous standby configured,
// on commits as local does.
const timelineSQL = "(CASE WHEN " + syncCommitSQL + " THEN " + pgcatalog.WriteTimelineSQL + " END)"

// syncCommitSQL is a condition, always true, that sets synchronous_commit on for the
// statement's transaction; completion and release, which return nothing, carry it in
// their WHERE clause.
const syncCommitSQL = "pg_catalog.set_config('synchronous_commit', 'on', true) IS NOT NULL"

// syncStandbySQL is true while the arbiter commits only once a synchronous standby
// has the commit: synchronous_standby_names names one, and one is attached as
// synchronous. JobsConfig.RequireSynchronousStandby adds it to the claim's filter.
// pg_stat_replication shows sync_state to roles with pg_read_all_stats (pg_monitor).
const syncStandbySQL = "(pg_catalog.current_setting('synchronous_standby_names') <> '' AND EXISTS " +
	"(SELECT FROM pg_catalog.pg_stat_replication r WHERE r.sync_state IN ('sync', 'quorum')))"

var (
	// ErrFailover: the arbiter went back in time under a lease. Either the job's
	// epoch on the arbiter is below the lease's — the claim was lost, with the WAL
	// tail of a primary that failed over to a standby that had not received it (or a
	// restore, or a manual change) — or the arbiter's timeline changed while the lease
	// was live: a failover the lease's earlier writes may not have survived. The lease
	// stops; the concrete error is *FailoverError, and it also matches ErrLeaseLost.
	ErrFailover = errors.New("claim [SF610]: the arbiter failed over under the lease")
	// ErrNoSynchronousStandby: RequireSynchronousStandby is set and the arbiter has no
	// synchronous standby attached, so a claim's commit could be lost on failover.
	ErrNoSynchronousStandby = errors.New("claim [SF611]: no synchronous standby")
	// ErrOutcomeUnknown: the connection was lost while a claim was in flight, so
	// whether it committed is unknown. No lease is returned: the job, if it was
	// claimed, is claimable again once the lease runs out.
	ErrOutcomeUnknown = errors.New("claim [SF612]: the claim's outcome is unknown")
)

// FailoverError says how a lease found its arbiter gone back in time.
type FailoverError struct {
	Table string // the jobs or claim table
	JobID any
	Op    string // renewal, claim check, completion, release
	Epoch int64  // the lease's epoch
	// Stored is the job's epoch on the arbiter, when it was found below Epoch
	// (HasStored); otherwise the claim is there and only the timeline moved.
	Stored    int64
	HasStored bool
	// ClaimTimeline is the timeline the claim was drawn on, Timeline the one the
	// arbiter writes on now (0 when unknown).
	ClaimTimeline, Timeline int64
}

func (e *FailoverError) Error() string {
	what := fmt.Sprintf("claim [%s]: %s of job %v in table %s at epoch %d: ", rulecode.ClaimLost, e.Op, e.JobID, e.Table, e.Epoch)
	if e.HasStored {
		if e.Stored == 0 {
			what += "the arbiter holds no claim of the job: the claim was lost"
		} else {
			what += fmt.Sprintf("the arbiter holds epoch %d for the job, below this claim's: the claim was lost", e.Stored)
		}
		if e.Timeline > e.ClaimTimeline && e.ClaimTimeline > 0 {
			what += fmt.Sprintf(" in a failover (claimed on timeline %d, the arbiter is now on timeline %d: its standby had not received the claim)", e.ClaimTimeline, e.Timeline)
		} else {
			what += " (a failover to a standby that had not received it, a restore, or a manual change)"
		}
	} else {
		what += fmt.Sprintf("the arbiter failed over while the lease was live (claimed on timeline %d, now timeline %d); writes of this execution may have been lost with the old primary", e.ClaimTimeline, e.Timeline)
	}
	return what + "; the lease is stopped: do not retry with this epoch. Claim the job again; " +
		"to keep claims through a failover, replicate synchronously (Patroni synchronous_mode_strict) and set RequireSynchronousStandby"
}

// Is makes a *FailoverError match ErrFailover and ErrLeaseLost.
func (e *FailoverError) Is(target error) bool { return target == ErrFailover || target == ErrLeaseLost }

// failedOver reports, and logs, a lease whose arbiter went back in time.
func (t *table) failedOver(ctx context.Context, e *FailoverError) *FailoverError {
	t.logger.LogAttrs(ctx, slog.LevelWarn, "sqlfence claim: failover under a live lease",
		slog.String("table", e.Table), slog.Any("job", e.JobID), slog.String("op", e.Op), slog.Int64("epoch", e.Epoch),
		slog.Int64("stored_epoch", e.Stored), slog.Int64("claim_timeline", e.ClaimTimeline), slog.Int64("timeline", e.Timeline))
	if t.onFailover != nil {
		t.onFailover(e)
	}
	return e
}

// checkTimeline compares the timeline a renewal or claim check read with the
// claim's.
func (l *Lease) checkTimeline(ctx context.Context, op string, tl sql.NullInt64) error {
	if !tl.Valid || l.timeline == 0 || tl.Int64 == l.timeline {
		return nil
	}
	return l.t.failedOver(ctx, &FailoverError{Table: l.t.name.String(), JobID: l.JobID, Op: op, Epoch: l.Epoch,
		ClaimTimeline: l.timeline, Timeline: tl.Int64})
}

// movedBack is the error of an operation that found the job's epoch below the
// lease's.
func (l *Lease) movedBack(ctx context.Context, db DB, op string, stored int64) *FailoverError {
	e := &FailoverError{Table: l.t.name.String(), JobID: l.JobID, Op: op, Epoch: l.Epoch, Stored: stored, HasStored: true, ClaimTimeline: l.timeline}
	var tl sql.NullInt64
	if db.QueryRowContext(claimctx.With(ctx), "SELECT "+pgcatalog.WriteTimelineSQL).Scan(&tl) == nil {
		e.Timeline = tl.Int64
	}
	return l.t.failedOver(ctx, e)
}

// noSyncStandby explains a claim refused under RequireSynchronousStandby, or returns
// nil when the arbiter has a synchronous standby (the claim found no job).
func (t *table) noSyncStandby(ctx context.Context, db DB) error {
	if !t.requireSync {
		return nil
	}
	var (
		names                  string
		sync, invisible, async int64
		standby                bool
	)
	// pgcatalog.SyncStateSQL: the query sqlfence doctor reports replication with.
	if err := db.QueryRowContext(claimctx.With(ctx), pgcatalog.SyncStateSQL).Scan(&names, &sync, &invisible, &standby, &async); err != nil {
		return fmt.Errorf("claim [SF618]: reading the arbiter's synchronous standbys for the %s %s: %w", t.kind, t.name, err)
	}
	switch {
	case standby:
		return fmt.Errorf("%w: the arbiter of the %s %s is a standby; claim on the primary (target_session_attrs=read-write)", ErrNoSynchronousStandby, t.kind, t.name)
	case names == "":
		return fmt.Errorf("%w: the arbiter of the %s %s has synchronous_standby_names empty, so commits do not wait for a standby and a failover can lose claims; "+
			"configure a synchronous standby (Patroni: synchronous_mode: true and synchronous_mode_strict: true), or drop RequireSynchronousStandby", ErrNoSynchronousStandby, t.kind, t.name)
	case sync == 0 && invisible > 0:
		return fmt.Errorf("%w: the arbiter of the %s %s has standbys, but this role may not see which are synchronous (pg_stat_replication.sync_state); "+
			"GRANT pg_monitor TO the role, or drop RequireSynchronousStandby", ErrNoSynchronousStandby, t.kind, t.name)
	case sync == 0:
		return fmt.Errorf("%w: the arbiter of the %s %s names synchronous standbys (%s) but none is attached as synchronous; a claim would wait for one: "+
			"bring the standby back, or drop RequireSynchronousStandby", ErrNoSynchronousStandby, t.kind, t.name, names)
	}
	return nil
}

// unknownOutcome wraps a claim's error when the connection was lost with the claim
// in flight: the server may have committed it. A server's error (a *pgconn.PgError
// other than a shutdown's), a connection that could not be made, a session sqlfence
// refused, and an error pgx raised before sending are known not to have claimed
// anything.
func unknownOutcome(err error, what string) error {
	var (
		pgErr      *pgconn.PgError
		connectErr *pgconn.ConnectError
		refused    *sqlfence.Error
	)
	if errors.As(err, &connectErr) || errors.As(err, &refused) {
		return err // nothing was sent: no connection, or sqlfence refused the session
	}
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		default:
			return err
		}
	} else if pgconn.SafeToRetry(err) || errors.Is(err, sql.ErrNoRows) || errors.Is(err, sql.ErrConnDone) {
		return err
	}
	return fmt.Errorf("%w: %s: the connection was lost with the claim in flight (%w); it may have committed: do not run the job on this claim — "+
		"if it was claimed, its lease runs out and a later claim takes it", ErrOutcomeUnknown, what, err)
}
