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
	"github.com/sqlfence/sqlfence/internal/rulecode"
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
		return noteFenced(ctx, f.guardSaid(c.D, c.Query, err))
	}
	return f.claimErrorBound(ctx, connQuerier(q), &c.Bound, err)
}

// claimErrorBound is claimError for any front.
func (f *enforcer) claimErrorBound(ctx context.Context, q engine.Querier, b *engine.Bound, err error) error {
	if err = f.guardSaid(b.D, b.Query, err); b.Claim == nil || errors.Is(err, ErrFenced) || errors.Is(err, ErrAlreadyWritten) {
		return noteFenced(ctx, err)
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

// guardSaid reads the guard's answer to a statement the driver sent. SF005: the
// statement was decided on a catalog version DDL has since moved on, so nothing was
// written, and it is the retryable SF525 (the catalog is read again before the next
// statement). SF001: the guard rejected a write the driver let through — a trigger,
// rule or cascade the snapshot may not show yet — so the catalog is read again too
// (only the version, when it has one), and the guard's error is returned as is; so
// is an undefined column or table, which the new read then explains.
func (f *enforcer) guardSaid(d *engine.Decision, query string, err error) error {
	var st interface{ SQLState() string }
	if err == nil || !errors.As(err, &st) {
		return err
	}
	if fe := guardFenced(d, query, err); fe != nil {
		return fe
	}
	if f.stale == nil {
		return err
	}
	switch st.SQLState() {
	case "SF005":
		f.stale.Store(true)
		table := ""
		if d != nil {
			table = d.TableNames()
		}
		return &Error{Kind: ErrRefused, Code: rulecode.CatalogChanged, Table: table, Statement: query,
			Reason: "the catalog changed (DDL by another session) after sqlfence decided the statement, and the guard refused it: nothing was written (" + err.Error() + ")",
			Fix:    "retry the statement, which sqlfence decides again on the catalog as it is now (inside a transaction, roll back and retry the transaction)"}
	case "SF001", "42703", "42P01":
		// Also a column or table the statement names that is gone: an epoch column
		// dropped or renamed, a protected table renamed, by another session.
		f.stale.Store(true)
	}
	return err
}
