package audit

import (
	"context"
	"fmt"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// fix moves the counter to highest, holding off claims while it does.
func (a *auditor) fix(ctx context.Context, c *auditCounter, highest int64) (*auditFix, error) {
	tx, err := a.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+cmdutil.PGDuration(a.lockTimeout)+"'"); err != nil {
		return nil, err
	}
	out := &auditFix{From: c.Value, To: highest}
	switch c.Kind {
	case "sequence":
		if highest > c.max {
			return nil, fmt.Errorf("the highest stored epoch %d is above the sequence %s's MAXVALUE %d", highest, c.Name, c.max)
		}
		// nextval cannot be locked out with LOCK TABLE, but ALTER SEQUENCE takes a lock
		// that conflicts with it: this no-op ALTER holds every claim off until COMMIT,
		// so the value read next cannot move before setval.
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER SEQUENCE %s INCREMENT BY %d", c.Name, c.increment)); err != nil {
			return nil, fmt.Errorf("locking the sequence %s against claims: %w", c.Name, err)
		}
		cur, err := a.sequenceValue(ctx, tx, *c)
		if err != nil {
			return nil, err
		}
		out.From = cur
		if cur >= highest {
			out.Note = fmt.Sprintf("the sequence is already at %d, past the highest stored epoch", cur)
			out.To = cur
			break
		}
		if _, err := tx.Exec(ctx, "SELECT setval($1::oid::regclass, $2, true)", c.oid, highest); err != nil {
			return nil, fmt.Errorf("moving the sequence %s: %w", c.Name, err)
		}
	case "jobs_table":
		if _, err := tx.Exec(ctx, "LOCK TABLE "+c.Name+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return nil, fmt.Errorf("locking %s against claims: %w", c.Name, err)
		}
		col := sqlident.Quote(c.Column)
		tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = $1 WHERE %s < $1", c.Name, col, col), highest)
		if err != nil {
			return nil, fmt.Errorf("raising %s.%s: %w", c.Name, col, err)
		}
		out.JobsRaised = tag.RowsAffected()
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	out.Applied = true
	c.Value = out.To
	return out, nil
}
