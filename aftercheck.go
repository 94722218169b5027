package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// check runs after a fenced write. A write that affected no rows is classified — a
// newer epoch on a matching row is a fence, this epoch in strict mode is "already
// written", no matching row is an ordinary result. With WithExactAccounting, a write
// that affected rows is also checked for matching rows the fence kept. Only these
// paths query again; the normal path costs no extra round trip.
func (f *enforcer) check(ctx context.Context, q driver.Conn, c *call, affected int64) (err error) {
	if !c.fenced {
		return nil
	}
	if f.observing {
		start := time.Now()
		defer func() {
			if c.checked || err != nil {
				f.noteCheck(ctx, c, start, err)
			}
		}()
	}
	if c.claim != nil && affected == 0 {
		// A claim-checked write that wrote nothing: first ask whether the claim
		// is still current, the one thing the row cannot tell.
		if err := f.superseded(ctx, q, c); err != nil {
			return noteFenced(ctx, err)
		}
	}
	cl := c.d.classify
	if cl == nil || affected > 0 && !exactAccounting(ctx) {
		return nil
	}
	if c.claim != nil && cl.table.Stale == StaleClaim {
		return nil // the row's epoch is stamped, not compared: nothing was fenced by it
	}
	return noteFenced(ctx, f.classify(ctx, q, c, affected))
}

// superseded reads the claim row of a claim-checked write and returns ErrFenced when
// it no longer holds the write's epoch; nil while the claim is current.
func (f *enforcer) superseded(ctx context.Context, q driver.Conn, c *call) error {
	c.checked = true
	rows, err := queryConn(ctx, q, c.claim.lookupText(), []driver.NamedValue{{Ordinal: 1, Value: c.claim.value}})
	if err != nil {
		return checkFailed(err)
	}
	defer rows.Close()
	e := &Error{Kind: ErrFenced, Code: rulecode.FencedClaim, Table: c.d.table(), Epoch: c.epoch, Statement: c.query,
		Fix: "stop the handler and do not retry with this epoch; the newer claim finishes the job"}
	dest := make([]driver.Value, 1)
	switch err := rows.Next(dest); {
	case errors.Is(err, io.EOF):
		e.Reason = fmt.Sprintf("the claim was superseded: job %v is no longer in the claim table %s", c.claim.value, c.claim.table)
		return e
	case err != nil:
		return checkFailed(err)
	}
	stored, ok := dest[0].(int64)
	switch {
	case !ok:
		e.Reason = fmt.Sprintf("the claim was superseded: job %v in the claim table %s holds no epoch", c.claim.value, c.claim.table)
	case stored == c.epoch:
		return nil
	}
	e.StoredEpoch, e.HasStored = stored, ok
	switch {
	case !ok:
	case stored > c.epoch:
		e.Reason = fmt.Sprintf("the claim was superseded: job %v was claimed again at epoch %d (claim table %s)", c.claim.value, stored, c.claim.table)
	default:
		e.Reason = fmt.Sprintf("the claim is not current: job %v holds epoch %d in the claim table %s, below this claim's (an epoch moved back: a restore, a test, a manual fix)", c.claim.value, stored, c.claim.table)
		e.Fix = "stop the handler; audit the epochs (sqlfence audit) before running more jobs"
	}
	return e
}

// claimError turns the server's answer to a claim-checked write whose claim was
// superseded into ErrFenced: the check yielded NULL, and the epoch column's NOT NULL
// constraint refused the row (SQLSTATE 23502). Other errors pass unchanged.
func (f *enforcer) claimError(ctx context.Context, q driver.Conn, c *call, err error) error {
	if c.claim == nil {
		return err
	}
	if e := c.claim.notInDatabase(err, c); e != nil {
		return e
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23502" {
		return err
	}
	epochColumn := false
	for _, t := range c.d.tables {
		epochColumn = epochColumn || pgErr.ColumnName == t.EpochColumn
	}
	if !epochColumn {
		return err
	}
	start := time.Now()
	ferr := f.superseded(ctx, q, c)
	if !errors.Is(ferr, ErrFenced) {
		ferr = nil // the claim is current, or the check failed: the server's error stands
	}
	if f.observing {
		f.noteCheck(ctx, c, start, ferr)
	}
	if ferr != nil {
		return noteFenced(ctx, ferr)
	}
	return err
}

func (f *enforcer) classify(ctx context.Context, q driver.Conn, c *call, affected int64) error {
	cl := c.d.classify
	t := cl.table
	fenced := &Error{Kind: ErrFenced, Code: rulecode.FencedRow, Table: t.QualifiedName.String(), Epoch: c.epoch, Statement: c.query,
		Reason: "a newer claim has written the rows this statement matches",
		Fix: "stop the handler and do not retry with this epoch: either this execution was superseded, or (global epochs) another job's newer claim wrote the row; " +
			"release the job so it runs again under a newer epoch, and run handlers under the claim (sqlfence.WithClaim) to tell the two apart"}
	if c.claim != nil {
		// A claim-checked write writes nothing once the claim is superseded, and check
		// asked superseded first when nothing was written: the claim is current.
		fenced.Fix = "this execution's claim is still current, so the newer epoch is another job's (global epochs): " +
			"release the job so it runs again under a newer claim, or declare the table `stale: claim`"
	}
	if cl.conflictOnly {
		// The conflicting rows cannot be read back (see classifier.conflictOnly), so
		// neither can a partial fence be counted.
		if affected > 0 {
			return nil
		}
		fenced.Reason = "every row conflicted with an existing row the fence kept"
		if t.Mode == ModeStrict {
			// In strict mode this epoch's own earlier write is kept too; without the
			// rows it cannot be told from a newer claim's, and a fence is the safe
			// reading (it stops the handler rather than let it go on superseded).
			fenced.Reason += ", written by a newer claim or, in strict mode, by this epoch before; " +
				"name the conflict columns (ON CONFLICT (col, …)) and insert constants or parameters for them so sqlfence can tell which"
		}
		return fenced
	}
	if cl = cl.resolve(f.policy, c.query, c.d.sql); cl == nil {
		return checkFailed(errors.New("the statement's classification query could not be rebuilt from its text"))
	}
	args := make([]driver.NamedValue, len(cl.args)+1)
	for i, a := range cl.args {
		if a < 0 || a >= len(c.user) {
			return nil
		}
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: c.user[a].Value}
	}
	args[len(cl.args)] = driver.NamedValue{Ordinal: len(args), Value: c.epoch}
	c.checked = true
	rows, err := queryConn(ctx, q, cl.query, args)
	if err != nil {
		return checkFailed(err)
	}
	defer rows.Close()
	dest := make([]driver.Value, 2)
	if err := rows.Next(dest); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return checkFailed(err)
	}
	stored, ok := dest[0].(int64)
	if !ok {
		return nil // no row matches: an ordinary 0-row result
	}
	if affected > 0 {
		if n, _ := dest[1].(int64); n > 0 {
			fenced.Reason = "a newer claim has written some of the rows this statement matches; the others were written"
			fenced.Affected, fenced.Fenced = affected, n
			fenced.StoredEpoch, fenced.HasStored = stored, stored > c.epoch
			return fenced
		}
		return nil
	}
	switch {
	case stored > c.epoch:
		fenced.StoredEpoch, fenced.HasStored = stored, true
		return fenced
	case stored == c.epoch && t.Mode == ModeStrict:
		return &Error{Kind: ErrAlreadyWritten, Code: rulecode.AlreadyWritten, Table: t.QualifiedName.String(), Epoch: c.epoch, Statement: c.query,
			StoredEpoch: stored, HasStored: true,
			Reason: "this execution wrote the row before, and strict mode allows one write per row per epoch",
			Fix:    "use mode: repeatable for this table if this handler writes a row more than once"}
	}
	return nil
}

// fencedRows wraps the rows of a fenced write with RETURNING, so that an empty result
// is classified like a write that affected no rows.
func (f *enforcer) wrapRows(ctx context.Context, q driver.Conn, rows driver.Rows, c call) driver.Rows {
	fr := &fencedRows{inner: rows, explain: func() error { return f.check(ctx, q, &c, 0) }}
	if c.claim != nil {
		fr.translate = func(err error) error { return f.claimError(ctx, q, &c, err) }
	}
	if c.d.classify == nil || !c.d.classify.returning {
		fr.explain = func() error { return nil }
	}
	return fr
}

// checkFailed reports a failed classification query. The write itself already ran, so
// the error must not be driver.ErrBadConn: database/sql would run the write again on
// another connection.
func checkFailed(err error) error {
	if errors.Is(err, driver.ErrBadConn) {
		return fmt.Errorf("sqlfence: the write ran, but checking the rows it matched failed: the connection broke (%v)", err)
	}
	return fmt.Errorf("sqlfence: the write ran, but checking the rows it matched failed: %w", err)
}
