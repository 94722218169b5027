// After a fenced write: the 0-row classification (a newer epoch on a matching row is
// a fence, this epoch in strict mode "already written", no matching row an ordinary
// result), exact accounting, and the claim's lookup when a claim-checked write found
// its claim gone. The engine builds the queries and reads their answers; the front
// runs them (Querier) and times them.

package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Querier runs one query with positional arguments and returns every row: the front's
// way to the server for the queries the engine asks.
type Querier = pgcatalog.QueryFunc

// QueryFailed is a check's query that failed: the write itself already ran, so the
// front must report it in a way that does not make the caller run the write again.
type QueryFailed struct{ Err error }

func (e *QueryFailed) Error() string { return e.Err.Error() }
func (e *QueryFailed) Unwrap() error { return e.Err }

// Check runs after a fenced write that affected affected rows. user holds the
// application's arguments (for the classification query's parameters); exact is
// WithExactAccounting. It returns nil, an *Error (KindFenced, KindAlreadyWritten),
// or a *QueryFailed. Only a write that affected no rows, exact accounting and a
// claim-checked write that wrote nothing query again.
func (e *Engine) Check(ctx context.Context, q Querier, b *Bound, user []any, affected int64, exact bool) error {
	if !b.Fenced {
		return nil
	}
	if b.Claim != nil && affected == 0 {
		// A claim-checked write that wrote nothing: first ask whether the claim
		// is still current, the one thing the row cannot tell.
		if err := e.Superseded(ctx, q, b); err != nil {
			return err
		}
	}
	cl := b.D.zeroRows
	if cl == nil || affected > 0 && !exact {
		return nil
	}
	if b.Claim != nil && cl.table.Stale == StaleClaim {
		return nil // the row's epoch is stamped, not compared: nothing was fenced by it
	}
	return e.explain(ctx, q, b, user, affected)
}

// NeedsCheck reports whether a fenced write that affected affected rows is checked.
func (b *Bound) NeedsCheck(affected int64, exact bool) bool {
	return b.Fenced && (affected == 0 || b.D.zeroRows != nil && exact)
}

// ChecksRows reports whether the rows of a fenced Query need watching: an empty
// RETURNING result is a 0-row write, and a claim-checked write's error may be a fence.
func (b *Bound) ChecksRows() bool {
	return b.Fenced && (b.Claim != nil || b.D.zeroRows != nil && b.D.zeroRows.returning)
}

// Returning reports whether an empty result of the statement's rows means it wrote
// no row (it has a RETURNING list).
func (b *Bound) Returning() bool { return b.D.zeroRows != nil && b.D.zeroRows.returning }

// Superseded reads the claim row of a claim-checked write and returns a fence
// (KindFenced) when it no longer holds the write's epoch; nil while the claim is
// current.
func (e *Engine) Superseded(ctx context.Context, q Querier, b *Bound) error {
	b.Checked = true
	cc := b.Claim
	rows, err := q(ctx, cc.lookupText(), cc.value)
	if err != nil {
		return &QueryFailed{err}
	}
	fe := &Error{Kind: KindFenced, Code: rulecode.FencedClaim, Table: b.D.table(), Epoch: b.Epoch, Statement: b.Query,
		Fix: "stop the handler and do not retry with this epoch; the newer claim finishes the job"}
	if len(rows) == 0 {
		fe.Reason = fmt.Sprintf("the claim was superseded: job %v is no longer in the claim table %s", cc.value, cc.table)
		return fe
	}
	stored, ok := rows[0][0].(int64)
	switch {
	case !ok:
		fe.Reason = fmt.Sprintf("the claim was superseded: job %v in the claim table %s holds no epoch", cc.value, cc.table)
	case stored == b.Epoch:
		return nil
	}
	fe.StoredEpoch, fe.HasStored = stored, ok
	switch {
	case !ok:
	case stored > b.Epoch:
		fe.Reason = fmt.Sprintf("the claim was superseded: job %v was claimed again at epoch %d (claim table %s)", cc.value, stored, cc.table)
	default:
		fe.Reason = fmt.Sprintf("the claim is not current: job %v holds epoch %d in the claim table %s, below this claim's (an epoch moved back: a restore, a test, a manual fix)", cc.value, stored, cc.table)
		fe.Fix = "stop the handler; audit the epochs (sqlfence audit) before running more jobs"
	}
	return fe
}

// ClaimError explains the server's refusal of a claim-checked write: a claim table
// missing from the database, or a superseded claim, whose check yielded NULL so that
// the epoch column's NOT NULL constraint refused the row (SQLSTATE 23502) — a fence.
// It returns the error to report (err itself when there is nothing to explain) and
// whether it queried the claim row.
func (e *Engine) ClaimError(ctx context.Context, q Querier, b *Bound, err error) (error, bool) {
	if b.Claim == nil {
		return err, false
	}
	if ne := b.Claim.NotInDatabase(err, b.D.table(), b.Epoch, b.Query); ne != nil {
		return ne, false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23502" {
		return err, false
	}
	epochColumn := false
	for _, t := range b.D.tables {
		epochColumn = epochColumn || pgErr.ColumnName == t.EpochColumn
	}
	if !epochColumn {
		return err, false
	}
	if ferr := e.Superseded(ctx, q, b); ferr != nil {
		if fe, ok := ferr.(*Error); ok && fe.Kind == KindFenced {
			return fe, true
		}
	}
	return err, true // the claim is current, or the check failed: the server's error stands
}

// explain runs the classification query of a fenced write.
func (e *Engine) explain(ctx context.Context, q Querier, b *Bound, user []any, affected int64) error {
	cl := b.D.zeroRows
	t := cl.table
	fenced := &Error{Kind: KindFenced, Code: rulecode.FencedRow, Table: t.QualifiedName.String(), Epoch: b.Epoch, Statement: b.Query,
		Reason: "a newer epoch has written the rows this statement matches",
		Fix: "stop the handler and do not retry with this epoch: either this execution was superseded, or (global epochs) another job's newer claim wrote the row; " +
			"release the job so it runs again under a newer epoch, and run handlers under the claim (sqlfence.WithClaim) to tell the two apart"}
	if b.Claim != nil {
		// A claim-checked write writes nothing once the claim is superseded, and Check
		// asked Superseded first when nothing was written: the claim is current.
		fenced.Fix = "this execution's claim is still current, so the newer epoch is another job's (global epochs): " +
			"release the job so it runs again under a newer claim, or declare the table `stale: claim`"
	}
	if cl.conflictOnly {
		// The conflicting rows cannot be read back (see Classifier.conflictOnly), so
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
	if cl = cl.resolve(e.policy, b.Query, b.D.sql); cl == nil {
		return &QueryFailed{errors.New("the statement's classification query could not be rebuilt from its text")}
	}
	args := make([]any, len(cl.args)+1)
	for i, a := range cl.args {
		if a < 0 || a >= len(user) {
			return nil
		}
		args[i] = user[a]
	}
	args[len(cl.args)] = b.Epoch
	b.Checked = true
	rows, err := q(ctx, cl.query, args...)
	if err != nil {
		return &QueryFailed{err}
	}
	if len(rows) == 0 {
		return nil
	}
	stored, ok := rows[0][0].(int64)
	if !ok {
		return nil // no row matches: an ordinary 0-row result
	}
	if affected > 0 {
		if n, _ := rows[0][1].(int64); n > 0 {
			fenced.Reason = "a newer epoch has written some of the rows this statement matches; the others were written"
			fenced.Affected, fenced.Fenced = affected, n
			fenced.StoredEpoch, fenced.HasStored = stored, stored > b.Epoch
			return fenced
		}
		return nil
	}
	switch {
	case stored > b.Epoch:
		fenced.StoredEpoch, fenced.HasStored = stored, true
		return fenced
	case stored == b.Epoch && t.Mode == ModeStrict:
		return &Error{Kind: KindAlreadyWritten, Code: rulecode.AlreadyWritten, Table: t.QualifiedName.String(), Epoch: b.Epoch, Statement: b.Query,
			StoredEpoch: stored, HasStored: true,
			Reason: "this execution wrote the row before, and strict mode allows one write per row per epoch",
			Fix:    "use mode: repeatable for this table if this handler writes a row more than once"}
	}
	return nil
}
