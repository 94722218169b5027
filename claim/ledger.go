// Ledger: claims in a claim table, for queues that only hand out an opaque receipt.

package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sqlfence/sqlfence/internal/claimctx"
)

// LedgerConfig describes a claim table: epochs for jobs that live somewhere
// else. Zero fields take the defaults.
type LedgerConfig struct {
	// Table is the claim table, written as in SQL. Default "sqlfence_claims".
	Table string
	// Epochs is where epochs come from. The zero value is GlobalEpoch.
	Epochs EpochSource
	// Sequence is GlobalEpoch's sequence. Default DefaultSequence.
	Sequence string
	// Counter is CounterEpoch's counter table. Default DefaultCounter.
	Counter string
	// Lease is how long a claim holds its job without renewal; match it to
	// the queue's visibility timeout. Default DefaultLease.
	Lease time.Duration
	// RenewEvery is how often the keeper renews the lease. Default Lease/3;
	// negative disables the keeper. Extend the message's visibility timeout
	// at the same pace.
	RenewEvery time.Duration
	// KeyNamespace goes into every effect key of this table's jobs; see
	// JobsConfig.KeyNamespace.
	KeyNamespace string
	// RequireSynchronousStandby, Logger and OnFailover: see JobsConfig.
	RequireSynchronousStandby bool
	Logger                    *slog.Logger
	OnFailover                func(*FailoverError)
	// (No TakeoverWait, unlike JobsConfig: the claim's ON CONFLICT DO UPDATE
	// locks the row before a wait could start, and the old claim's completion
	// would then wait for the takeover while the takeover waits for it. A
	// takeover that meets the old claim's open transaction reports Locked.)
}

// Ledger claims jobs in a claim table: one row (job_id, lease_epoch, status,
// lease_expires_at) per job of a queue that hands out only an opaque receipt,
// such as SQS. The queue delivers; the claim table, in the application's
// database, orders. A message redelivered while its claim is live is refused
// (ErrNotClaimable); one whose job is done is refused with ErrDone, so the
// worker acknowledges it instead of running it twice. The receipt only
// acknowledges the message; the epoch belongs to the claim row.
//
// The table is the library's own; create it with Schema. Its columns are
// named like a jobs table's, so a policy declares it as a claim table with
// the defaults (claims: [table: sqlfence_claims]). Keep done rows for
// as long as the queue may redeliver their messages, and under PerJobEpoch
// keep them for good: deleting a row restarts that job's epochs at 1.
type Ledger struct {
	t        table
	schema   string
	claimSQL string // $1 job id, $2 lease µs → RETURNING epoch, lease_expires_at
}

// NewLedger checks cfg and prepares the claim statements for its table.
func NewLedger(cfg LedgerConfig) (*Ledger, error) { return newLedger(cfg, false) }

// newLedger is NewLedger; legacy runs the statements of before timelines (the failover
// tests' teeth).
func newLedger(cfg LedgerConfig, legacy bool) (*Ledger, error) {
	l := &Ledger{t: table{kind: "claim table", keyNS: cfg.KeyNamespace}}
	seq, ctr, err := leaseConfig(&l.t, cfg.Epochs, cfg.Sequence, cfg.Counter, cfg.Lease, cfg.RenewEvery,
		failoverOptions{cfg.RequireSynchronousStandby, cfg.Logger, cfg.OnFailover})
	if err != nil {
		return nil, err
	}
	if cfg.Table == "" {
		cfg.Table = "sqlfence_claims"
	}
	if l.t.name, err = parseName("claim table", cfg.Table, 2); err != nil {
		return nil, err
	}
	T := l.t.name.sql
	tlSQL, syncSQL := timelineSQL, syncCommitSQL
	if legacy {
		tlSQL, syncSQL = "NULL::bigint", "true"
	}
	l.t.keyCol, l.t.epochCol = name{parts: []string{"job_id"}, sql: "job_id"}, name{parts: []string{"lease_epoch"}, sql: "lease_epoch"}
	// A job seen for the first time draws as if its previous epoch were 0.
	first, next, prefix := epochDraw(cfg.Epochs, seq, "0", legacy), epochDraw(cfg.Epochs, seq, "c.lease_epoch", legacy), ""
	if cfg.Epochs == CounterEpoch {
		prefix = counterCTE(ctr)
	}
	row := fmt.Sprintf("VALUES ($1, %s, 'claimed', now() + $2::bigint * interval '1 microsecond')", first)
	if cfg.RequireSynchronousStandby {
		// No row to insert, and so none to conflict on, while no synchronous
		// standby is attached: the claim returns nothing and Claim explains why.
		row = fmt.Sprintf("SELECT $1::text, %s, 'claimed', now() + $2::bigint * interval '1 microsecond' WHERE %s", first, syncStandbySQL)
	}
	// One statement claims a job seen for the first time (the INSERT) or
	// again (the DO UPDATE). The DO UPDATE's SET runs once PostgreSQL holds
	// the existing row's lock, so the new epoch is drawn after the previous
	// claim committed. A release is claimable at once (<=); a live claim's
	// lease must have run out (<); a done job never is.
	l.claimSQL = prefix + fmt.Sprintf(`INSERT INTO %[1]s AS c (job_id, lease_epoch, status, lease_expires_at) `+
		`%[2]s `+
		`ON CONFLICT (job_id) DO UPDATE SET lease_epoch = %[3]s, status = 'claimed', lease_expires_at = excluded.lease_expires_at `+
		`WHERE ((c.status = 'released' AND c.lease_expires_at <= now()) OR (c.status = 'claimed' AND c.lease_expires_at < now())) `+
		// The takeover locks the row FOR UPDATE, as a jobs table's does: it
		// comes after every open claim-checked transaction of the old claim
		// (NOWAIT: reported, not queued behind it).
		`AND EXISTS (SELECT FROM %[1]s x WHERE x.job_id = c.job_id FOR UPDATE NOWAIT) `+
		`RETURNING c.lease_epoch, c.lease_expires_at, `+tlSQL, T, row, next)
	const held = "WHERE job_id = $1 AND lease_epoch = $2::bigint AND status = 'claimed'"
	l.t.renewSQL = fmt.Sprintf("UPDATE %s SET lease_expires_at = now() + $3::bigint * interval '1 microsecond' %s RETURNING lease_expires_at, %s", T, held, tlSQL)
	l.t.completeSQL = fmt.Sprintf("UPDATE %s SET status = 'done' %s AND %s", T, held, syncSQL)
	// A release reuses lease_expires_at as "claimable from".
	l.t.releaseSQL = fmt.Sprintf("UPDATE %s SET status = 'released', lease_expires_at = now() + $3::bigint * interval '1 microsecond' %s AND %s", T, held, syncSQL)
	l.t.checkSQL = fmt.Sprintf("SELECT %s FROM %s %s FOR KEY SHARE", tlSQL, T, held)
	l.t.inspectSQL = fmt.Sprintf("SELECT status, lease_epoch, lease_expires_at, NULL::timestamptz, now() FROM %s WHERE job_id = $1", T)

	if cfg.Epochs == GlobalEpoch {
		l.schema = sequenceDDL(seq)
	}

	l.schema += fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	job_id text PRIMARY KEY,
	lease_epoch bigint NOT NULL CHECK (lease_epoch > 0),
	status text NOT NULL CHECK (status IN ('claimed', 'released', 'done')),
	lease_expires_at timestamptz NOT NULL
);
`, T)
	if cfg.Epochs == CounterEpoch {
		l.schema += counterDDL(ctr, "SELECT max(lease_epoch) FROM "+T)
	}
	return l, nil
}

// Schema returns DDL that creates the claim table and, for GlobalEpoch, the
// sequence; it does nothing to objects that exist.
func (l *Ledger) Schema() string { return l.schema }

// Table returns the claim table's name as PostgreSQL resolves it.
func (l *Ledger) Table() string { return l.t.name.String() }

// Claim claims jobID — the message's stable identity, such as its message id
// or a business key, not the receipt handle, which changes with every
// delivery — and returns its Lease. A job that is not claimable gives a
// *NotClaimableError: ErrNotClaimable while another claim's lease is live,
// ErrDone too once the job was completed.
//
// ctx becomes the parent of the handler's context (Lease.Context).
func (l *Ledger) Claim(ctx context.Context, db DB, jobID string) (*Lease, error) {
	if err := l.t.checkSequenceOrdered(ctx, db); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent: no outcome to be unsure of
	}
	sent := time.Now()
	var (
		epoch int64
		exp   time.Time
		tl    sql.NullInt64
	)
	err := db.QueryRowContext(claimctx.With(ctx), l.claimSQL, jobID, micros(l.t.lease)).Scan(&epoch, &exp, &tl)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := l.t.noSyncStandby(ctx, db); err != nil {
			return nil, err
		}
		return nil, l.t.notClaimable(ctx, db, jobID)
	case isLocked(err):
		return nil, l.t.locked(ctx, db, jobID)
	case err != nil:
		return nil, unknownOutcome(fmt.Errorf("claim [SF618]: claiming job %q in the claim table %s: %w", jobID, l.t.name, err), fmt.Sprintf("claim of job %q in the claim table %s", jobID, l.t.name))
	}
	return newLease(ctx, &l.t, db, jobID, epoch, tl.Int64, exp, sent), nil
}
