// Claims as one conditional statement on the arbiter: the shared claim, renew, complete
// and release statements of Jobs and Ledger, and their errors.

package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
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
	// CounterEpoch takes every epoch from one counter row (table
	// DefaultCounter), incremented in the claim's own statement. Like
	// GlobalEpoch, epochs of different jobs are comparable; unlike a
	// sequence, the row's order holds on distributed PostgreSQL (Citus,
	// CockroachDB, YugabyteDB), where a sequence's values are not ordered
	// across nodes. The price: every claim takes the row's lock until its
	// transaction commits, so claims run one at a time.
	CounterEpoch
)

func (s EpochSource) String() string {
	switch s {
	case GlobalEpoch:
		return "GlobalEpoch"
	case PerJobEpoch:
		return "PerJobEpoch"
	case CounterEpoch:
		return "CounterEpoch"
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
	ErrNoJob = errors.New("claim [SF614]: no job to claim")
	// ErrNotClaimable: the job asked for is held by a live claim, not yet
	// available, done, or missing. The concrete error is *NotClaimableError.
	ErrNotClaimable = errors.New("claim [SF615]: job not claimable")
	// ErrDone: the job asked for was completed. It also matches
	// ErrNotClaimable. For a queue that redelivers a message whose
	// acknowledgement was lost, it means: acknowledge it, do not run it again.
	ErrDone = errors.New("claim [SF615]: job is done")
	// ErrLeaseLost is the cause a Lease's context is cancelled with when the
	// lease could not be renewed. The concrete cause is *LostError; it also
	// matches sqlfence.ErrFenced when the renewal found the job claimed again.
	ErrLeaseLost = errors.New("claim [SF616]: lease lost")
	// ErrEnded is the cause a Lease's context is cancelled with by Complete,
	// Release and Stop, and the error of a second Complete or Release.
	ErrEnded = errors.New("claim [SF613]: lease ended")
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
	return fmt.Sprintf("claim [SF615]: job %v in table %s is not claimable: %s; %s", e.JobID, e.Table, what, fix)
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
	return fmt.Sprintf("claim [SF616]: lease lost: job %v in table %s, epoch %d: %v; stop the handler: the job may already run elsewhere under a newer epoch",
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
	checkSQL    string // $1 id, $2 epoch → one row while the claim holds, locked FOR KEY SHARE

	keyNS string // KeyNamespace, for effect keys

	epochs  EpochSource
	engines engineCache // GlobalEpoch: the arbiters found to order a sequence

	requireSync bool // RequireSynchronousStandby
	logger      *slog.Logger
	onFailover  func(*FailoverError)
}

// failoverOptions are the settings of JobsConfig and LedgerConfig about failovers.
type failoverOptions struct {
	requireSync bool
	logger      *slog.Logger
	onFailover  func(*FailoverError)
}

// leaseConfig resolves the settings Jobs and Ledger share.
func leaseConfig(t *table, epochs EpochSource, sequence, counter string, lease, renewEvery time.Duration, fo failoverOptions) (seq, ctr name, err error) {
	t.requireSync, t.logger, t.onFailover = fo.requireSync, fo.logger, fo.onFailover
	if t.logger == nil {
		t.logger = slog.Default()
	}
	switch epochs {
	case GlobalEpoch, PerJobEpoch, CounterEpoch:
	default:
		return name{}, name{}, fmt.Errorf("claim [SF617]: unknown epoch source %v; use GlobalEpoch, PerJobEpoch or CounterEpoch", epochs)
	}
	t.epochs = epochs
	if sequence == "" {
		sequence = DefaultSequence
	}
	if seq, err = parseName("sequence", sequence, 2); err != nil {
		return name{}, name{}, err
	}
	if counter == "" {
		counter = DefaultCounter
	}
	if ctr, err = parseName("counter table", counter, 2); err != nil {
		return name{}, name{}, err
	}
	switch {
	case lease == 0:
		lease = DefaultLease
	case lease < time.Millisecond:
		return name{}, name{}, fmt.Errorf("claim [SF617]: lease %v is too short; leases are at least 1ms (default %v)", lease, DefaultLease)
	}
	switch {
	case renewEvery == 0:
		renewEvery = lease / 3
	case renewEvery >= lease:
		return name{}, name{}, fmt.Errorf("claim [SF617]: RenewEvery %v is not shorter than the lease %v: the lease would run out between renewals; use about a third of it", renewEvery, lease)
	}
	t.lease, t.renewEvery = lease, renewEvery
	return seq, ctr, nil
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
// fails — except when the job's epoch is below the claim's: the arbiter lost the
// claim, and the error is a *FailoverError.
func (l *Lease) notHeld(ctx context.Context, db DB, op, stmt string) error {
	t, id, epoch := l.t, l.JobID, l.Epoch
	// SF102 unless the inspection tells more: the claim is no longer this one.
	e := &sqlfence.Error{Kind: sqlfence.ErrFenced, Code: rulecode.FencedClaim, Table: t.name.String(), Epoch: epoch, Statement: stmt,
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
	case errors.Is(inspectError, sql.ErrNoRows) && t.kind == "claim table":
		// The claim table's row is the claim: gone, it was lost (the first claim
		// of a job, in a failover to a standby that had not received it).
		return l.movedBack(ctx, db, op, 0)
	case errors.Is(inspectError, sql.ErrNoRows):
		e.Reason = fmt.Sprintf("%s refused: job %v is no longer in the %s", op, id, t.kind)
	case inspectError != nil:
		e.Reason = fmt.Sprintf("%s refused: no row of job %v holds epoch %d as claimed (inspecting the row failed: %v)", op, id, epoch, inspectError)
	case stored > epoch && l.timeline > 0 && pgcatalog.EpochTimeline(stored) > l.timeline:
		// Drawn on a later timeline: a failover came between the two claims, and
		// may have lost this one before its lease ran out.
		e.StoredEpoch, e.HasStored, e.Code = stored, true, rulecode.FencedClaim
		e.Reason = fmt.Sprintf("%s refused: job %v was claimed again at epoch %d (now %s) on a later timeline of the arbiter (%d; this claim was on %d): after this claim's lease ran out, or after a failover lost this claim",
			op, id, stored, status, pgcatalog.EpochTimeline(stored), l.timeline)
	case stored > epoch:
		e.StoredEpoch, e.HasStored, e.Code = stored, true, rulecode.FencedClaim
		e.Reason = fmt.Sprintf("%s refused: job %v was claimed again at epoch %d (now %s) after this claim's lease ran out", op, id, stored, status)
	case stored == epoch:
		e.StoredEpoch, e.HasStored, e.Code = stored, true, rulecode.ClaimEnded
		e.Reason = fmt.Sprintf("%s refused: job %v is already %s at this claim's epoch", op, id, status)
		e.Fix = "the claim was already completed or released; a lease ends once"
	default:
		// Below this claim's: the arbiter lost the claim (a failover to a standby
		// that had not received it) or was moved back (a restore, a manual fix).
		return l.movedBack(ctx, db, op, stored)
	}
	return e
}
