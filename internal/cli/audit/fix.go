package audit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// fix moves the counter so that the next epoch drawn is above every stored epoch,
// holding off claims while it does. A sequence or a counter row is raised to the
// highest stored epoch less the timeline's floor, so that floor plus its next value
// is above the row; per-job epochs raise every lower job to the highest stored
// epoch, except epochs of a later timeline, which raising would not make safe.
func (a *auditor) fix(ctx context.Context, rep *auditReport) (*auditFix, error) {
	c := &rep.Counter
	tx, err := a.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+cmdutil.PGDuration(a.lockTimeout)+"'"); err != nil {
		return nil, err
	}
	out := &auditFix{From: c.Value, To: rep.Highest, RawFrom: c.Raw}
	switch c.Kind {
	case kindSequence, kindCounter:
		err = a.fixCounter(ctx, tx, c, out)
	case kindJobs:
		err = a.fixJobs(ctx, tx, rep, out)
	}
	if err != nil {
		return nil, err
	}
	if out.Note != "" {
		return out, nil // nothing to move
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	out.Applied = true
	c.Value = out.To
	if c.Kind == kindJobs {
		out.RawTo = max(c.Raw, out.To)
	}
	c.Raw = out.RawTo
	return out, nil
}

// fixCounter raises a sequence or a counter row to out.To less the timeline's floor.
func (a *auditor) fixCounter(ctx context.Context, tx pgx.Tx, c *auditCounter, out *auditFix) error {
	target := out.To - floorOf(c.Timeline)
	var cur int64
	if c.Kind == kindSequence {
		// nextval cannot be locked out with LOCK TABLE, but ALTER SEQUENCE takes a lock
		// that conflicts with it: this no-op ALTER holds every claim off until COMMIT,
		// so the value read next cannot move before setval.
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER SEQUENCE %s INCREMENT BY %d", c.Name, c.increment)); err != nil {
			return fmt.Errorf("locking the sequence %s against claims: %w", c.Name, err)
		}
		var err error
		if cur, err = a.sequenceValue(ctx, tx, *c); err != nil {
			return err
		}
	} else {
		// Every claim updates the counter row: locking it holds them off until COMMIT.
		if err := tx.QueryRow(ctx, "SELECT value::bigint FROM "+c.Name+" FOR UPDATE").Scan(&cur); err != nil {
			return fmt.Errorf("locking the counter %s against claims: %w", c.Name, err)
		}
	}
	out.RawFrom, out.RawTo = cur, target
	var err error
	if out.From, err = onTimeline(c.Timeline, cur); err != nil {
		return err
	}
	if cur >= target { // claims moved it past since it was read
		out.Note = fmt.Sprintf("the %s is already at %d (epoch %d on timeline %d), past the highest stored epoch", counterWhat(c.Kind), cur, out.From, c.Timeline)
		out.To, out.RawTo = out.From, cur
		c.Value, c.Raw = out.From, cur
		return nil
	}
	if c.Kind == kindSequence {
		if target > c.max {
			return fmt.Errorf("moving the sequence %s past the highest stored epoch %d takes the value %d (less timeline %d's floor %d), above its MAXVALUE %d",
				c.Name, out.To, target, c.Timeline, floorOf(c.Timeline), c.max)
		}
		if _, err := tx.Exec(ctx, "SELECT setval($1::oid::regclass, $2, true)", c.oid, target); err != nil {
			return fmt.Errorf("moving the sequence %s: %w", c.Name, err)
		}
	} else {
		// The counter's trigger lets an update through only when it raises the value.
		if _, err := tx.Exec(ctx, "UPDATE "+c.Name+" SET value = $1 WHERE value < $1", target); err != nil {
			return fmt.Errorf("moving the counter %s: %w", c.Name, err)
		}
	}
	return nil
}

// fixJobs raises every job below the highest stored epoch of the server's timeline
// to it. Rows of a later timeline are left: see writeLaterTimeline.
func (a *auditor) fixJobs(ctx context.Context, tx pgx.Tx, rep *auditReport, out *auditFix) error {
	c := &rep.Counter
	target := fixTarget(rep)
	out.RowsLeft = laterAbove(rep)
	if target <= c.Value {
		out.To = c.Value
		out.Note = fmt.Sprintf("every row above the counter holds an epoch of a later timeline than the server's %d, which raising the jobs would not make safe (see below)", c.Timeline)
		return nil
	}
	out.To = target
	if _, err := tx.Exec(ctx, "LOCK TABLE "+c.Name+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		return fmt.Errorf("locking %s against claims: %w", c.Name, err)
	}
	col := sqlident.Quote(c.Column)
	tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = $1 WHERE %s < $1", c.Name, col, col), target)
	if err != nil {
		return fmt.Errorf("raising %s.%s: %w", c.Name, col, err)
	}
	out.JobsRaised = tag.RowsAffected()
	return nil
}
