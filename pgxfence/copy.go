// CopyFrom: rows into an unprotected table pass unchanged; into a protected table
// each row carries the epoch in the epoch column, and under a claim the claim row is
// held for the copy's transaction.

package pgxfence

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// copyFrom decides the copy as the INSERT it amounts to (INSERT INTO table
// (columns) VALUES ($1, …)): refused, passed unchanged, or fenced. A fenced copy
// adds the epoch column to the columns and the epoch to each row; a new row carries
// the epoch, as a fenced INSERT's does (COPY adds rows only: nothing to compare).
// Under a claim the copy runs in a transaction (t's, or one begun here) that first
// locks the claim row FOR SHARE and checks it still holds this epoch, so no newer
// claim can take the job until the rows are committed. Observer events name the
// INSERT text. pgx writes COPY's own text, which cannot carry the guard's marker, so
// where the database-side guard (sqlfence guard) is installed on the table it
// refuses the copy: insert through INSERT … SELECT FROM unnest($1::…[]) there.
func (fe *fence) copyFrom(ctx context.Context, t target, inTx bool, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if len(table) == 0 || len(columns) == 0 {
		return t.run.CopyFrom(ctx, table, columns, src) // pgx reports it
	}
	insert := front.CopyInsert(table, columns)
	c, _, err := fe.prepare(ctx, t, insert, make([]any, len(columns)), forBatch)
	if err != nil {
		return 0, err
	}
	if !c.Fenced {
		n, err := t.run.CopyFrom(ctx, table, columns, src)
		if err != nil {
			err = fe.refused(ctx, t, &c, err)
		}
		return n, err
	}
	tables := c.D.Tables()
	if len(tables) != 1 {
		return 0, &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.CopyFrom, Table: c.D.TableNames(), Epoch: c.Epoch, Statement: insert,
			Reason: front.CopyManyReason, Fix: front.CopyManyFix}
	}
	cols := append(append(make([]string, 0, len(columns)+1), columns...), tables[0].EpochColumn)
	stamped := &stampSource{src: src, epoch: c.Epoch}
	if c.Claim == nil {
		n, err := t.run.CopyFrom(ctx, table, cols, stamped)
		if err != nil {
			err = fe.refused(ctx, t, &c, err)
		}
		return n, err
	}
	// Under a claim: hold the claim row for the copy's transaction.
	run := t.run
	var tx pgx.Tx
	if !inTx {
		if tx, err = t.conn.Begin(ctx); err != nil {
			return 0, err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		run = tx
	}
	lt := target{conn: t.conn, status: t.status, run: run, pending: t.pending}
	if _, err := lt.querier(fe)(ctx, c.Claim.LockText(), c.Claim.Key()); err != nil {
		return 0, err
	}
	if err := fe.f.Check(ctx, lt.querier(fe), &c, 0); err != nil {
		return 0, err // the claim was superseded: ErrFenced, nothing copied
	}
	n, err := run.CopyFrom(ctx, table, cols, stamped)
	if err != nil {
		// The guard's word only: the claim was checked under its lock above, and the
		// copy's transaction has failed, so nothing more is read on it.
		cc := c
		cc.Claim = nil
		return n, fe.refused(ctx, lt, &cc, err)
	}
	if tx == nil {
		return n, err
	}
	return n, tx.Commit(ctx)
}

// stampSource appends the epoch to every row of src.
type stampSource struct {
	src   pgx.CopyFromSource
	epoch int64
	row   []any
}

func (s *stampSource) Next() bool { return s.src.Next() }
func (s *stampSource) Err() error { return s.src.Err() }

func (s *stampSource) Values() ([]any, error) {
	v, err := s.src.Values()
	if err != nil {
		return nil, err
	}
	s.row = append(append(s.row[:0], v...), s.epoch)
	return s.row, nil
}
