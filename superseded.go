// The early check (CheckSuperseded): whether a newer epoch already wrote a row the
// handler is about to touch, asked before the handler acts.

package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// RowQuerier runs a query that returns one row: *sql.DB, *sql.Conn and
// *sql.Tx satisfy it, through sqlfence or the plain pgx driver.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// CheckSuperseded is the early check: before a handler acts, it asks whether
// any row of table matching where already carries an epoch newer than the
// epoch on ctx — that is, whether a newer claim has written the rows this
// execution is about to touch. A handler that is superseded learns it before
// it computes, calls out, or writes anything, instead of at its first fenced
// write.
//
//	err := sqlfence.CheckSuperseded(ctx, db, policy, "inventory", "sku = $1", sku)
//	if err != nil {
//		return err // errors.Is(err, sqlfence.ErrFenced) when superseded
//	}
//
// It returns nil when no matching row holds a newer epoch, and otherwise the
// same thing a fenced write returns: a *Error matching ErrFenced, with the
// highest epoch found as StoredEpoch. Superseded is not a condition to handle
// and carry on from — the execution must stop, exactly as after a fenced
// write — so it is an error, it flows through the handler's existing
// errors.Is(err, ErrFenced) branch, and, like a fenced write, it cancels the
// handler's context when that context came from OnFenced (a claim.Lease's
// does).
//
// table is written as in SQL and in the policy ("inventory",
// "billing.invoices", `"Odd Name"`); the epoch column is the one the policy
// gives it. p may be nil for a table that uses the default epoch column,
// writer_epoch. where is SQL — normally the WHERE of the write the handler is
// about to run, with its $n parameters in args; "" checks the whole table. It
// is spliced into the query as written, so like any query text it must never
// be built from untrusted input.
//
// The check is an early exit, not the guarantee: a successor can still write
// between the check and the handler's own write, and that write is then
// fenced by the driver as usual. An epoch equal to the context's is not
// newer: it is this execution's own earlier write.
func CheckSuperseded(ctx context.Context, q RowQuerier, p *Policy, table, where string, args ...any) error {
	parts, err := sqlident.Split(table)
	if err == nil && len(parts) > 2 {
		err = fmt.Errorf("%d dot-separated parts; use name or schema.name", len(parts))
	}
	if err != nil {
		return fmt.Errorf("sqlfence: early check: bad table name %q: %v", table, err)
	}
	ref := QualifiedName{Name: parts[len(parts)-1]}
	if len(parts) == 2 {
		ref.Schema = parts[0]
	}
	column := defaultPolicyEpochColumn
	if p != nil {
		t, ambiguous := p.Match(ref.Schema, ref.Name)
		switch {
		case t == nil:
			return fmt.Errorf("sqlfence: early check: table %s is not protected by policy %s, so its rows carry no epoch to compare; list it under tables: or check a protected table", ref, p.Source)
		case ambiguous:
			return fmt.Errorf("sqlfence: early check: table %s matches several entries of policy %s with different epoch columns or modes; qualify it with its schema", ref, p.Source)
		}
		column = t.EpochColumn
	}

	epoch, ok := EpochFrom(ctx)
	if !ok {
		e := &Error{Kind: ErrUnfenced, Code: rulecode.NoEpoch, Table: ref.String(),
			Reason: "the early check compares the rows' epochs with the claim's, and the context has no epoch",
			Fix:    "run it under the handler's context: lease.Context() from the claim helpers, or sqlfence.WithEpoch(ctx, epoch) with the epoch the claim returned"}
		if v, bad := ctx.Value(epochKey{}).(invalidEpoch); bad {
			e.Code = rulecode.BadEpoch
			e.Epoch, e.Reason = int64(v), "the context's epoch is not positive"
			e.Fix = "pass the epoch the claim returned; epochs start at 1"
		}
		return e
	}

	rel := pgx.Identifier{ref.Name}
	if ref.Schema != "" {
		rel = pgx.Identifier{ref.Schema, ref.Name}
	}
	// pg_catalog.max: the built-in aggregate, whatever the session put in search_path.
	query := "SELECT pg_catalog.max(" + pgx.Identifier{column}.Sanitize() + ") FROM " + rel.Sanitize()
	if where != "" {
		// The newline ends a trailing -- comment in where before our parenthesis.
		query += " WHERE (" + where + "\n)"
	}
	var stored sql.NullInt64
	if err := q.QueryRowContext(ctx, query, args...).Scan(&stored); err != nil {
		if errors.Is(err, sql.ErrNoRows) { // cannot happen for an aggregate; keep the contract
			return nil
		}
		return fmt.Errorf("sqlfence: early check on %s: %w", ref, err)
	}
	if !stored.Valid || stored.Int64 <= epoch {
		return nil
	}
	return noteFenced(ctx, &Error{Kind: ErrFenced, Code: rulecode.FencedEarly, Table: ref.String(), Epoch: epoch,
		StoredEpoch: stored.Int64, HasStored: true, Statement: query,
		Reason: fmt.Sprintf("early check: a row this execution is about to touch was written at epoch %d, by a newer claim", stored.Int64),
		Fix: "stop the handler before acting, and do not retry with this epoch: this execution was superseded, or (global epochs) another job's newer claim wrote the row; " +
			"release the job so it runs again under a newer epoch"})
}
