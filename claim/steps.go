// Steps: a handler's transactions recorded once, so a later execution skips them.
package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Steps records the steps of multi-transaction handlers in a steps table, one
// row per effect key (Lease.Key), committed in the step's own transaction. A
// later execution of the job finds the row and skips the step; a step whose
// transaction rolled back left no row and runs again.
//
// The table is the library's own and is not a protected table: every record
// first runs Lease.Check in the same transaction, so a superseded execution
// cannot record a step once its successor's claim has committed, and a
// successor's claim cannot commit while a superseded execution's step
// transaction is still open. That holds through any driver and whatever the
// policy lists; a steps table declared in the policy would only be fenced
// where the transaction goes through sqlfence with that policy.
type Steps struct {
	name      name
	schema    string
	recordSQL string // $1 key, $2 job table, $3 job id, $4 step, $5 epoch
}

// DefaultStepsTable is the steps table unless configured otherwise.
const DefaultStepsTable = "sqlfence_steps"

// NewSteps prepares the statements for a steps table, written as in SQL;
// empty is DefaultStepsTable.
func NewSteps(table string) (*Steps, error) {
	if table == "" {
		table = DefaultStepsTable
	}
	n, err := parseName("steps table", table, 2)
	if err != nil {
		return nil, err
	}
	return &Steps{
		name: n,
		schema: fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	key text PRIMARY KEY,
	job_table text NOT NULL,
	job_id text NOT NULL,
	step text NOT NULL,
	epoch bigint NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT now()
);
`, n.sql),
		recordSQL: fmt.Sprintf("INSERT INTO %s (key, job_table, job_id, step, epoch) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING", n.sql),
	}, nil
}

// Schema returns DDL that creates the steps table; it does nothing to a table
// that exists.
func (s *Steps) Schema() string { return s.schema }

// Table returns the steps table's name as PostgreSQL resolves it.
func (s *Steps) Table() string { return s.name.String() }

// Record records step of l's job in tx, the step's own transaction, before
// the step's writes. done reports that an earlier execution's transaction
// committed the step: skip its writes and roll tx back. Otherwise the step is
// recorded with whatever tx writes next: commit, and the step is done for
// every later execution; roll back, and it is not.
//
// A claim that no longer holds the job gives an error matching
// sqlfence.ErrFenced, also when the step was done: a superseded execution
// learns it is superseded before it learns anything else. A bad step name is
// an error (see Lease.Key).
func (s *Steps) Record(ctx context.Context, tx DB, l *Lease, step string) (done bool, err error) {
	key, err := l.Key(step)
	if err != nil {
		return false, err
	}
	if err := l.Check(ctx, tx); err != nil {
		return false, err
	}
	// The row lock Check holds orders this insert: an earlier execution's
	// step transaction has ended — committed or not — before this claim
	// existed, so the conflict below is the whole truth about the step.
	res, err := tx.ExecContext(ctx, s.recordSQL, key, l.t.name.String(), JobText(l.JobID), step, l.Epoch)
	if err != nil {
		return false, fmt.Errorf("claim [SF618]: recording step %q of job %v (table %s, epoch %d) in the steps table %s: %w; create it with Steps.Schema", step, l.JobID, l.t.name, l.Epoch, s.name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim [SF618]: recording step %q of job %v in the steps table %s: %w", step, l.JobID, s.name, err)
	}
	return n == 0, nil
}

// Run runs fn as step of l's job in a transaction of its own on db (give it
// the sqlfence handle, so fn's protected writes are fenced too): Record, then
// fn, then commit. ran is false when an earlier execution committed the step;
// fn is then not called. An error from fn rolls the step back and is
// returned as it is.
func (s *Steps) Run(ctx context.Context, db *sql.DB, l *Lease, step string, fn func(tx *sql.Tx) error) (ran bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("claim [SF618]: step %q of job %v: beginning its transaction: %w", step, l.JobID, err)
	}
	defer tx.Rollback()
	done, err := s.Record(ctx, tx, l, step)
	if err != nil || done {
		return false, err
	}
	if err := fn(tx); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		if errors.Is(err, sql.ErrTxDone) {
			return false, fmt.Errorf("claim [SF618]: step %q of job %v: its transaction ended before the commit (was the context cancelled?): %w", step, l.JobID, err)
		}
		return false, fmt.Errorf("claim [SF618]: step %q of job %v: commit: %w", step, l.JobID, err)
	}
	return true, nil
}
