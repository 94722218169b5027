// Jobs: claims on a PostgreSQL jobs table, its schema, ClaimNext and Claim.

package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/claimctx"
)

// JobsConfig describes a jobs table: one row per job, claimed by the
// conditional UPDATE that takes an expired or pending job and bumps its epoch. Zero fields take the
// defaults, so JobsConfig{} is the table Schema creates, with global epochs.
type JobsConfig struct {
	// Table is the jobs table, written as in SQL ("jobs", "app.jobs",
	// `"Jobs"`). Default "jobs".
	Table   string
	Columns JobColumns
	// Epochs is where epochs come from. The zero value is GlobalEpoch.
	Epochs EpochSource
	// Sequence is GlobalEpoch's sequence. Default DefaultSequence.
	Sequence string
	// Counter is CounterEpoch's counter table. Default DefaultCounter.
	Counter string
	// Lease is how long a claim holds its job without renewal. Default
	// DefaultLease.
	Lease time.Duration
	// RenewEvery is how often the keeper renews the lease. Default Lease/3;
	// negative disables the keeper (then call Lease.Renew yourself).
	RenewEvery time.Duration
	// Returning lists columns the claim statement also returns, scanned into
	// the dest arguments of Claim and ClaimNext: the job's payload, in the
	// same round trip as the claim. Schema does not create them: add them to
	// the table (ALTER TABLE jobs ADD COLUMN sku text NOT NULL, …).
	Returning []string
	// TakeoverWait is how long Claim waits, at a takeover, for a transaction
	// the old claim still has open on the job's row (its lease ran out after
	// a claim-checked write); the statement's lock_timeout. Zero: Claim does
	// not wait and reports NotClaimableError.Locked at once (NOWAIT). Either
	// way the new claim comes after that transaction's writes. ClaimNext never
	// waits: it skips the job and takes another. Claimed inside a *sql.Tx,
	// the lock_timeout stays set until that transaction ends.
	TakeoverWait time.Duration
	// KeyNamespace goes into every effect key of this table's jobs
	// (Lease.Key). Leave it empty when one database's keys reach the
	// receivers; give each database its own when several do (staging and
	// production sending to one payment account), or their job 1 of table
	// jobs would be the same effect.
	KeyNamespace string

	// RequireSynchronousStandby refuses claims, with ErrNoSynchronousStandby,
	// while the arbiter has no synchronous standby attached: a claim committed
	// on the primary alone is lost if it fails over, and the job runs twice.
	// Claims, renewals, completions and claim checks always commit with
	// synchronous_commit on, whatever the session's setting; this makes sure a
	// standby is there to wait for. The role must see pg_stat_replication's
	// sync_state (pg_monitor).
	RequireSynchronousStandby bool
	// Logger receives a warning when a lease finds its arbiter failed over
	// under it (ErrFailover). Default slog.Default().
	Logger *slog.Logger
	// OnFailover, when set, is called with each *FailoverError, before the
	// lease's context is cancelled with it: count them, page an operator.
	OnFailover func(*FailoverError)
}

// JobColumns names the columns the claim reads and writes. Empty fields take
// the defaults in brackets. The helpers write the status values 'pending',
// 'claimed' and 'done'.
type JobColumns struct {
	ID          string // the job's key [id]
	Status      string // text: pending, claimed, done [status]
	Epoch       string // bigint: the last claim's epoch [lease_epoch]
	ExpiresAt   string // timestamptz: the last claim's lease end [lease_expires_at]
	AvailableAt string // timestamptz: when a pending job becomes claimable [available_at]
	// EnqueueKey is a unique text column, NULL for jobs enqueued without a
	// key: EnqueueSuccessor's [enqueue_key]. Schema creates it; add it to an
	// existing table with ALTER TABLE jobs ADD COLUMN enqueue_key text UNIQUE.
	EnqueueKey string
}

// Jobs claims jobs from a jobs table. It is safe for concurrent use.
type Jobs struct {
	t         table
	schema    string
	roles     map[string]string // column → role, for EnqueueSuccessor's checks
	enqKey    name
	claimSQL  string // $1 id, $2 lease µs
	nextSQL   string // $1 lease µs
	returning int
}

// NewJobs checks cfg and prepares the claim statements for its table.
func NewJobs(cfg JobsConfig) (*Jobs, error) { return newJobs(cfg, false) }

// newJobs is NewJobs; legacy runs the statements of before timelines: epochs drawn
// without the floor, no synchronous commit, no timeline returned (the failover tests'
// teeth).
func newJobs(cfg JobsConfig, legacy bool) (*Jobs, error) {
	j := &Jobs{t: table{kind: "jobs table", keyNS: cfg.KeyNamespace}}
	seq, ctr, err := leaseConfig(&j.t, cfg.Epochs, cfg.Sequence, cfg.Counter, cfg.Lease, cfg.RenewEvery,
		failoverOptions{cfg.RequireSynchronousStandby, cfg.Logger, cfg.OnFailover})
	if err != nil {
		return nil, err
	}
	if cfg.Table == "" {
		cfg.Table = "jobs"
	}
	if j.t.name, err = parseName("jobs table", cfg.Table, 2); err != nil {
		return nil, err
	}
	c := cfg.Columns
	var id, status, epoch, expires, avail, enqKey name
	seen := map[string]string{}
	for _, col := range []struct {
		dst        *name
		field, val string
		def        string
	}{
		{&id, "ID", c.ID, "id"},
		{&status, "Status", c.Status, "status"},
		{&epoch, "Epoch", c.Epoch, "lease_epoch"},
		{&expires, "ExpiresAt", c.ExpiresAt, "lease_expires_at"},
		{&avail, "AvailableAt", c.AvailableAt, "available_at"},
		{&enqKey, "EnqueueKey", c.EnqueueKey, "enqueue_key"},
	} {
		if col.val == "" {
			col.val = col.def
		}
		if *col.dst, err = parseName(col.field+" column", col.val, 1); err != nil {
			return nil, err
		}
		if prev, dup := seen[col.dst.parts[0]]; dup {
			return nil, fmt.Errorf("claim [SF617]: columns %s and %s are both %q; each role needs its own column", prev, col.field, col.dst.parts[0])
		}
		seen[col.dst.parts[0]] = col.field
	}
	tlSQL, syncSQL := timelineSQL, syncCommitSQL
	if legacy {
		tlSQL, syncSQL = "NULL::bigint", "true"
	}
	j.t.keyCol, j.t.epochCol = id, epoch
	j.roles, j.enqKey = seen, enqKey
	ret := []string{id.sql, epoch.sql, expires.sql, tlSQL}
	for _, r := range cfg.Returning {
		n, err := parseName("Returning column", r, 1)
		if err != nil {
			return nil, err
		}
		ret = append(ret, n.sql)
	}
	j.returning = len(cfg.Returning)

	T := j.t.name.sql
	next, prefix := epochDraw(cfg.Epochs, seq, epoch.sql, legacy), ""
	if cfg.Epochs == CounterEpoch {
		prefix = counterCTE(ctr)
	}
	// A job is claimable when it is pending and due, or claimed by a lease
	// that ran out. now() is the arbiter's clock: the one clock every
	// claimer reads, used for leases only — the epoch never comes from it.
	claimable := fmt.Sprintf("((%[1]s = 'pending' AND %[2]s <= now()) OR (%[1]s = 'claimed' AND %[3]s < now()))",
		status.sql, avail.sql, expires.sql)
	if cfg.RequireSynchronousStandby {
		claimable = "(" + claimable + " AND " + syncStandbySQL + ")"
	}
	// The epoch expression sits in SET, which PostgreSQL evaluates once it
	// holds the row lock (re-evaluating it if a concurrent claim got there
	// first), so each claim's epoch is drawn after the previous claim of the
	// job committed: strictly greater, from either source.
	set := func(leaseParam int) string {
		return fmt.Sprintf("SET %s = 'claimed', %s = %s, %s = now() + $%d::bigint * interval '1 microsecond'",
			status.sql, epoch.sql, next, expires.sql, leaseParam)
	}
	returning := " RETURNING " + strings.Join(ret, ", ")

	// A takeover locks the row FOR UPDATE before it changes the epoch: claim-checked
	// writes of the previous claim hold FOR KEY SHARE on it until they commit, so
	// the new claim becomes visible only after the old claim's writes. NOWAIT (or
	// TakeoverWait's bounded wait), and SKIP LOCKED in nextSQL, keep a claimer from
	// queueing behind such a transaction for long: the job is reported locked (or
	// skipped) instead. Renewals,
	// completion and release take the weaker FOR NO KEY UPDATE, which FOR KEY SHARE
	// does not block, so the old claim's own keeper keeps running meanwhile.
	lock := " FOR UPDATE NOWAIT"
	switch {
	case cfg.TakeoverWait < 0:
		return nil, fmt.Errorf("claim [SF617]: TakeoverWait %v is negative; use 0 for no wait", cfg.TakeoverWait)
	case cfg.TakeoverWait > 0:
		// The wait is bounded by a lock_timeout local to the claim's own
		// transaction, set in the row's filter so that it is in force when the
		// row lock below waits (and not one statement later).
		lock = fmt.Sprintf(" AND pg_catalog.set_config('lock_timeout', '%dms', true) IS NOT NULL FOR UPDATE",
			(cfg.TakeoverWait+time.Millisecond-1)/time.Millisecond)
	}
	j.claimSQL = prefix + fmt.Sprintf("UPDATE %[1]s %[2]s WHERE %[3]s = (SELECT %[3]s FROM %[1]s WHERE %[3]s = $1 AND %[4]s%[6]s) AND %[4]s%[5]s", T, set(2), id.sql, claimable, returning, lock)
	// SKIP LOCKED lets concurrent workers pick different jobs instead of
	// queueing on one; the outer WHERE repeats the condition so the UPDATE
	// stays a conditional claim on its own.
	j.nextSQL = prefix + fmt.Sprintf("UPDATE %[1]s %[2]s WHERE %[3]s = (SELECT %[3]s FROM %[1]s WHERE %[4]s ORDER BY %[5]s, %[3]s LIMIT 1 FOR UPDATE SKIP LOCKED) AND %[4]s%[6]s",
		T, set(1), id.sql, claimable, avail.sql, returning)

	held := fmt.Sprintf("WHERE %s = $1 AND %s = $2::bigint AND %s = 'claimed'", id.sql, epoch.sql, status.sql)
	j.t.renewSQL = fmt.Sprintf("UPDATE %s SET %s = now() + $3::bigint * interval '1 microsecond' %s RETURNING %s, %s", T, expires.sql, held, expires.sql, tlSQL)
	j.t.completeSQL = fmt.Sprintf("UPDATE %s SET %s = 'done' %s AND %s", T, status.sql, held, syncSQL)
	j.t.releaseSQL = fmt.Sprintf("UPDATE %s SET %s = 'pending', %s = now() + $3::bigint * interval '1 microsecond' %s AND %s", T, status.sql, avail.sql, held, syncSQL)
	j.t.checkSQL = fmt.Sprintf("SELECT %s FROM %s %s FOR KEY SHARE", tlSQL, T, held)
	j.t.inspectSQL = fmt.Sprintf("SELECT %s::text, %s, %s, %s, now() FROM %s WHERE %s = $1", status.sql, epoch.sql, expires.sql, avail.sql, T, id.sql)

	var b strings.Builder
	if cfg.Epochs == GlobalEpoch {
		b.WriteString(sequenceDDL(seq))
	}

	fmt.Fprintf(&b, `CREATE TABLE IF NOT EXISTS %[1]s (
	%[2]s bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	%[3]s text NOT NULL DEFAULT 'pending' CHECK (%[3]s IN ('pending', 'claimed', 'done')),
	%[4]s bigint NOT NULL DEFAULT 0 CHECK (%[4]s >= 0),
	%[5]s timestamptz,
	%[6]s timestamptz NOT NULL DEFAULT now(),
	%[9]s text UNIQUE
);
CREATE INDEX IF NOT EXISTS %[7]s ON %[1]s (%[6]s, %[2]s) WHERE %[3]s = 'pending';
CREATE INDEX IF NOT EXISTS %[8]s ON %[1]s (%[5]s) WHERE %[3]s = 'claimed';
`, T, id.sql, status.sql, epoch.sql, expires.sql, avail.sql, indexName(j.t.name, "_pending_idx"), indexName(j.t.name, "_claimed_idx"), enqKey.sql)
	if cfg.Epochs == CounterEpoch {
		// After the jobs table: the counter starts above its epochs.
		b.WriteString(counterDDL(ctr, fmt.Sprintf("SELECT max(%s) FROM %s", epoch.sql, T)))
	}
	j.schema = b.String()
	return j, nil
}

// sequenceDDL creates a global epoch sequence. NO CYCLE and CACHE 1 are
// PostgreSQL's defaults, spelled out because each is load-bearing: a cycling
// sequence restarts epochs at 1, and a cached one lets a session hand out a
// value below one another session already used.
func sequenceDDL(seq name) string {
	return fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s AS bigint MINVALUE 1 NO CYCLE CACHE 1;\n", seq.sql)
}

// Schema returns DDL that creates the jobs table (with the configured names)
// and, for GlobalEpoch, the sequence; it does nothing to objects that exist.
// Add the job's payload columns to the table, or give the configured columns
// to an existing table. Run it as a migration, or through a handle without sqlfence:
// a fenced connection refuses DDL unless the policy says `ddl: allow`.
func (j *Jobs) Schema() string { return j.schema }

// Table returns the jobs table's name as PostgreSQL resolves it.
func (j *Jobs) Table() string { return j.t.name.String() }

// ClaimNext claims the next claimable job, oldest available first, and
// returns its Lease; ErrNoJob when there is none. dest receives the
// configured Returning columns.
//
// ctx becomes the parent of the handler's context (Lease.Context), so
// cancelling it stops the handler and the keeper.
func (j *Jobs) ClaimNext(ctx context.Context, db DB, dest ...any) (*Lease, error) {
	if err := j.checkDest(dest); err != nil {
		return nil, err
	}
	if err := j.t.checkSequenceOrdered(ctx, db); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent: no outcome to be unsure of
	}
	sent := time.Now()
	l, err := j.scan(ctx, db, sent, db.QueryRowContext(claimctx.With(ctx), j.nextSQL, micros(j.t.lease)), dest)
	if errors.Is(err, sql.ErrNoRows) {
		if err := j.t.noSyncStandby(ctx, db); err != nil {
			return nil, err
		}
		return nil, ErrNoJob
	}
	return l, err
}

// Claim claims the job with the given id and returns its Lease. A job that is
// not claimable — held by a live lease, not yet available, done, missing —
// gives a *NotClaimableError (ErrNotClaimable; also ErrDone for a done job).
func (j *Jobs) Claim(ctx context.Context, db DB, id any, dest ...any) (*Lease, error) {
	if err := j.checkDest(dest); err != nil {
		return nil, err
	}
	if err := j.t.checkSequenceOrdered(ctx, db); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent: no outcome to be unsure of
	}
	sent := time.Now()
	l, err := j.scan(ctx, db, sent, db.QueryRowContext(claimctx.With(ctx), j.claimSQL, id, micros(j.t.lease)), dest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := j.t.noSyncStandby(ctx, db); err != nil {
			return nil, err
		}
		return nil, j.t.notClaimable(ctx, db, id)
	case isLocked(err):
		return nil, j.t.locked(ctx, db, id)
	}
	return l, err
}

func (j *Jobs) checkDest(dest []any) error {
	if len(dest) != j.returning {
		return fmt.Errorf("claim [SF617]: %d dest arguments for %d Returning columns of the jobs table %s", len(dest), j.returning, j.t.name)
	}
	return nil
}

func (j *Jobs) scan(ctx context.Context, db DB, sent time.Time, row *sql.Row, dest []any) (*Lease, error) {
	var (
		id    any
		epoch int64
		exp   time.Time
		tl    sql.NullInt64
	)
	if err := row.Scan(append([]any{&id, &epoch, &exp, &tl}, dest...)...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		var pgErr *pgconn.PgError
		if j.returning > 0 && errors.As(err, &pgErr) && pgErr.Code == "42703" { // undefined_column
			return nil, fmt.Errorf("claim [SF618]: claiming from the jobs table %s: %w; Schema creates only the claim's own columns: "+
				"add the payload columns JobsConfig.Returning names to the table (ALTER TABLE %s ADD COLUMN …)", j.t.name, err, j.t.name)
		}
		return nil, unknownOutcome(fmt.Errorf("claim [SF618]: claiming from the jobs table %s: %w", j.t.name, err), "claim in the jobs table "+j.t.name.String())
	}
	return newLease(ctx, &j.t, db, id, epoch, tl.Int64, exp, sent), nil
}

// isLocked reports PostgreSQL's lock_not_available (55P03): a FOR UPDATE NOWAIT met
// a lock.
func isLocked(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// locked is the error of a takeover that met an open transaction of the claim it
// would supersede.
func (t *table) locked(ctx context.Context, db DB, id any) error {
	err := t.notClaimable(ctx, db, id)
	var nc *NotClaimableError
	if errors.As(err, &nc) {
		nc.Locked = true
	}
	return err
}

// notClaimable reads the row a refused claim was about, for the error.
func (t *table) notClaimable(ctx context.Context, db DB, id any) error {
	e := &NotClaimableError{Table: t.name.String(), JobID: id}
	var exp, avail sql.NullTime
	err := db.QueryRowContext(claimctx.With(ctx), t.inspectSQL, id).Scan(&e.Status, &e.Epoch, &exp, &avail, &e.Now)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return e
	case err != nil:
		return fmt.Errorf("claim [SF618]: job %v in table %s was not claimable, and reading why failed: %w", id, t.name, err)
	}
	e.Found, e.ExpiresAt = true, exp.Time
	switch e.Status {
	case statusPending:
		e.AvailableAt = avail.Time
	case statusReleased: // a claim table's release: claimable again from its lease end
		e.AvailableAt, e.ExpiresAt = exp.Time, time.Time{}
	}
	return e
}
