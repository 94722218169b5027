// A prepared statement of the database/sql front: fenced at prepare time, bound to the
// epoch of the context it is executed with, decided again when the catalog changed.

package sqlfence

import (
	"context"
	"database/sql/driver"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// stmt is a prepared protected write. The text was fenced at prepare time; the epoch
// is bound at each execution from the context it runs under, because one prepared
// statement outlives many claims.
type stmt struct {
	inner driver.Stmt
	conn  *conn
	enf   *enforcer // the enforcer d was decided by
	d     *engine.Decision
	query string
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

func (s *stmt) Close() error { return s.inner.Close() }

// NumInput hides the epoch parameter: the application passes its own arguments only.
func (s *stmt) NumInput() int {
	n := s.inner.NumInput()
	if n > 0 && s.d.Act() == engine.ActRewrite {
		return n - 1
	}
	return n
}

func (s *stmt) bind(ctx context.Context, args []driver.NamedValue) (call, error) {
	if cn := s.conn.cn; cn != nil && cn.current() != s.enf {
		// The catalog was read again since the statement was prepared: decide it again.
		// The server holds the prepared text, so only the same decision can run.
		d := s.conn.decision(s.query)
		if s.conn.enf.shadowing() {
			d = engine.Pass // as PrepareContext: shadow mode sends the text unchanged
		}
		if d.Act() == s.d.Act() && d.Act() == engine.ActRewrite && d.SQL() != s.d.SQL() && d.EpochParam() == s.d.EpochParam() {
			// The same fence on a newer catalog (the marker's catalog version moved):
			// prepare the new text in place of the old, which the guard would refuse.
			if err := s.reprepare(ctx, d.SQL()); err != nil {
				return call{}, err
			}
			s.d = d
		}
		if d.Act() != s.d.Act() || d.SQL() != s.d.SQL() {
			epoch, _ := EpochFrom(ctx)
			e := d.Refusal()
			if d.Act() != engine.ActRefuse {
				e = &engine.Error{Kind: engine.KindRefused, Code: rulecode.PreparedChanged,
					Reason: "the catalog changed since the statement was prepared, and sqlfence now decides it differently",
					Fix:    "prepare the statement again"}
			}
			err := publicError(e.ForStatement(s.query, epoch))
			if s.conn.enf.observing {
				s.conn.enf.noteError(ctx, err, s.query, epoch)
			}
			return call{}, err
		}
		s.d, s.enf = d, s.conn.enf
	}
	c, err := s.conn.enf.bind(ctx, s.d, s.query, args, false)
	if err != nil {
		return call{}, err
	}
	if !c.Fenced && s.d.Act() == engine.ActRewrite {
		err := &Error{Kind: ErrUnfenced, Code: rulecode.UnfencedPrepared, Table: s.d.TableNames(), Statement: s.query,
			Reason: "sqlfence.Unfenced cannot run a prepared protected write: its prepared text carries the fence",
			Fix:    "run it unprepared (db.ExecContext) under sqlfence.Unfenced, or prepared under sqlfence.WithEpoch"}
		if s.conn.enf.observing {
			s.conn.enf.noteError(ctx, err, s.query, 0)
		}
		return call{}, err
	}
	return c, nil
}

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.conn.usable(ctx, s.query); err != nil {
		return nil, err
	}
	c, err := s.bind(ctx, args)
	if err != nil {
		return nil, err
	}
	var res driver.Result
	if c.Claim != nil || c.Carried {
		// The claim check and the carried epoch change the text: run it unprepared
		// (the statement was prepared without them).
		res, err = s.conn.execUnprepared(ctx, &c)
	} else if e, ok := s.inner.(driver.StmtExecContext); ok {
		res, err = e.ExecContext(ctx, c.args)
	} else {
		//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
		res, err = s.inner.Exec(values(c.args))
	}
	if err != nil {
		return nil, s.conn.enf.claimError(ctx, s.conn.inner, &c, err)
	}
	if s.d.Catalog() != 0 {
		if err := s.conn.catalogChanged(ctx, s.d.Catalog()); err != nil {
			return nil, err
		}
	}
	if n, err := res.RowsAffected(); err == nil && c.NeedsCheck(n, exactAccounting(ctx)) {
		if err := s.conn.enf.check(ctx, s.conn.inner, &c, n); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.conn.usable(ctx, s.query); err != nil {
		return nil, err
	}
	c, err := s.bind(ctx, args)
	if err != nil {
		return nil, err
	}
	var rows driver.Rows
	if c.Claim != nil || c.Carried {
		rows, err = queryConn(ctx, s.conn.inner, c.Send, c.args)
		if err != nil {
			return nil, s.conn.enf.claimError(ctx, s.conn.inner, &c, err)
		}
		return s.conn.enf.wrapRows(ctx, s.conn.inner, rows, c), nil
	}
	if q, ok := s.inner.(driver.StmtQueryContext); ok {
		rows, err = q.QueryContext(ctx, c.args)
	} else {
		//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
		rows, err = s.inner.Query(values(c.args))
	}
	if err == nil && s.d.Catalog() != 0 {
		return s.conn.afterRows(ctx, rows, s.d.Catalog()), nil
	}
	if err != nil || !c.Fenced || !c.Returning() {
		return rows, err
	}
	return s.conn.enf.wrapRows(ctx, s.conn.inner, rows, c), nil
}

// CheckNamedValue forwards to the statement, then the connection, as database/sql
// itself would look for a checker if sqlfence were not in between.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if err := s.conn.enf.checkRewriter(nv); err != nil {
		return err
	}
	if n, ok := s.inner.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return s.conn.CheckNamedValue(nv)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func values(args []driver.NamedValue) []driver.Value {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

// reprepare replaces the inner prepared statement with one of send.
func (s *stmt) reprepare(ctx context.Context, send string) error {
	var (
		ns  driver.Stmt
		err error
	)
	if p, ok := s.conn.inner.(driver.ConnPrepareContext); ok {
		ns, err = p.PrepareContext(ctx, send)
	} else {
		ns, err = s.conn.inner.Prepare(send)
	}
	if err != nil {
		return err
	}
	s.inner.Close()
	s.inner = ns
	return nil
}
