// Successor jobs: enqueued in the parent's transaction, once per parent and step.
package claim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// EnqueueSuccessor inserts the job that follows parent's — parent may come
// from this table, another jobs table or a Ledger — in tx, the parent's
// handler transaction, with the parent's effect key for step in the
// EnqueueKey column. It checks first that parent still holds its job
// (Lease.Check), so a superseded execution enqueues nothing once its
// successor's claim has committed; and the key is unique, so two executions
// of the parent that both commit enqueue one successor. added is false when
// the successor was already there; id is the successor's either way.
//
// columns and values are the successor's payload; its status and epoch are
// left to their defaults (AvailableAt may be given, to start it later). A
// role column other than AvailableAt in columns is an error: a successor is
// enqueued pending, never claimed.
func (j *Jobs) EnqueueSuccessor(ctx context.Context, tx DB, parent *Lease, step string, columns []string, values ...any) (id any, added bool, err error) {
	if len(columns) != len(values) {
		return nil, false, fmt.Errorf("claim [SF617]: successor of job %v in %s: %d columns for %d values", parent.JobID, j.t.name, len(columns), len(values))
	}
	key, err := parent.Key(step)
	if err != nil {
		return nil, false, err
	}
	cols := []string{j.enqKey.sql}
	params := []string{"$1"}
	for i, c := range columns {
		n, err := parseName("successor column", c, 1)
		if err != nil {
			return nil, false, err
		}
		if role, ok := j.roles[n.parts[0]]; ok && role != "AvailableAt" {
			return nil, false, fmt.Errorf("claim [SF617]: successor of job %v in %s: column %s is the table's %s column, which the helpers own; give only the payload (and AvailableAt)", parent.JobID, j.t.name, n, role)
		}
		cols = append(cols, n.sql)
		params = append(params, fmt.Sprintf("$%d", i+2))
	}
	if err := parent.Check(ctx, tx); err != nil {
		return nil, false, err
	}
	T, K, ID := j.t.name.sql, j.enqKey.sql, j.t.keyCol.sql
	insert := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO NOTHING RETURNING %s", T, strings.Join(cols, ", "), strings.Join(params, ", "), K, ID)
	err = tx.QueryRowContext(ctx, insert, append([]any{key}, values...)...).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("claim [SF618]: enqueueing the successor (step %q) of job %v (table %s, epoch %d) into %s: %w; the table needs a unique %s column (Schema creates it)",
			step, parent.JobID, parent.t.name, parent.Epoch, j.t.name, err, j.enqKey)
	}
	// The row lock Check holds orders this read after every transaction of an
	// earlier execution: the conflicting successor is committed and visible.
	if err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1", ID, T, K), key).Scan(&id); err != nil {
		return nil, false, fmt.Errorf("claim [SF618]: the successor (step %q) of job %v conflicted on %s %s in %s, and reading it failed: %w", step, parent.JobID, j.enqKey, key, j.t.name, err)
	}
	return id, false, nil
}
