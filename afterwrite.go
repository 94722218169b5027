// After a fenced write, the database/sql front's half: the engine's checks run over
// the inner connection (internal/engine/explain.go decides what they mean), timed for
// the observer, and a fence cancels the handler's context.

package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// check runs after a fenced write that affected affected rows (engine.Check).
func (f *enforcer) check(ctx context.Context, q driver.Conn, c *call, affected int64) error {
	if !c.Fenced {
		return nil
	}
	return f.checkBound(ctx, connQuerier(q), &c.Bound, userValues(c.user), affected, exactAccounting(ctx))
}

// checkBound is check for any front: the engine's check, timed for the observer; a
// fence cancels the handler's context.
func (f *enforcer) checkBound(ctx context.Context, q engine.Querier, b *engine.Bound, user []any, affected int64, exact bool) (err error) {
	if !b.Fenced {
		return nil
	}
	if f.observing {
		start := time.Now()
		defer func() {
			if b.Checked || err != nil {
				f.noteCheck(ctx, b, start, err)
			}
		}()
	}
	return noteFenced(ctx, checkFailed(fromEngine(f.eng.Check(ctx, q, b, user, affected, exact))))
}

// claimError turns the server's answer to a claim-checked write whose claim was
// superseded into ErrFenced (engine.ClaimError). Other errors pass unchanged.
func (f *enforcer) claimError(ctx context.Context, q driver.Conn, c *call, err error) error {
	if c.Claim == nil {
		return err
	}
	return f.claimErrorBound(ctx, connQuerier(q), &c.Bound, err)
}

// claimErrorBound is claimError for any front.
func (f *enforcer) claimErrorBound(ctx context.Context, q engine.Querier, b *engine.Bound, err error) error {
	if b.Claim == nil {
		return err
	}
	start := time.Now()
	out, queried := f.eng.ClaimError(ctx, q, b, err)
	out = fromEngine(out)
	if queried && f.observing {
		var ferr error
		if errors.Is(out, ErrFenced) {
			ferr = out
		}
		f.noteCheck(ctx, b, start, ferr)
	}
	return noteFenced(ctx, out)
}

// wrapRows wraps the rows of a fenced write with RETURNING, so that its result is
// explained like Exec's: the rows returned are the rows it wrote.
func (f *enforcer) wrapRows(ctx context.Context, q driver.Conn, rows driver.Rows, c call) driver.Rows {
	exact := exactAccounting(ctx)
	fr := &fencedRows{inner: rows, explain: func(n int64) error {
		if !c.Returning() || !c.NeedsCheck(n, exact) {
			return nil
		}
		return f.check(ctx, q, &c, n)
	}}
	if c.Claim != nil {
		fr.translate = func(err error) error { return f.claimError(ctx, q, &c, err) }
	}
	return fr
}

// checkFailed reports a failed check query. The write itself already ran, so the
// error must not be driver.ErrBadConn: database/sql would run the write again on
// another connection.
func checkFailed(err error) error {
	var qf *engine.QueryFailed
	if !errors.As(err, &qf) {
		return err
	}
	if errors.Is(qf.Err, driver.ErrBadConn) {
		return fmt.Errorf("sqlfence: the write ran, but checking the rows it matched failed: the connection broke (%v)", qf.Err)
	}
	return fmt.Errorf("sqlfence: the write ran, but checking the rows it matched failed: %w", qf.Err)
}

// userValues is the application's arguments as the engine's checks take them.
func userValues(args []driver.NamedValue) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}
