// One statement through the fence: the query rewriter, the decision on the text the
// server will run, the exec mode it is sent with, and the checks after it ran.

package pgxfence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// sendMode is the exec mode a statement with nargs arguments is sent with: the
// call's or the connection's, except that the simple protocol becomes
// QueryExecModeExec. In the simple protocol pgx interpolates the arguments into the
// text on the client, so the server would run a text sqlfence never decided on:
// the epoch and every argument as literals, through pgx's own quoting (which has
// had bugs that turned an argument into SQL). Deciding on the interpolated text
// instead would mean redoing that interpolation here and trusting it to match
// pgx's byte for byte, and would give every argument value its own decision. The
// extended protocol sends the text sqlfence decided on and the arguments apart
// from it. QueryExecModeExec keeps what the simple protocol is chosen for — one
// round trip, no prepared statement left on the server (poolers in transaction
// mode) — and encodes arguments from their Go types as the simple protocol does.
// Without arguments pgx uses the simple protocol anyway, and the text is sent as
// decided (a fenced Exec with the epoch written in as a literal, checked against
// the decided text: engine.Bound.Literal).
func (fe *fence) sendMode(o *options, nargs int) (pgx.QueryExecMode, bool) {
	mode := fe.mode
	if o.hasMode {
		mode = o.mode
	}
	if mode == pgx.QueryExecModeSimpleProtocol && nargs > 0 {
		return pgx.QueryExecModeExec, true
	}
	return mode, o.hasMode
}

// prepare readies the fence and the session, applies the call's rewriter and binds
// the text it produced. send is what to pass to pgx: the options it keeps, then the
// call's arguments.
func (fe *fence) prepare(ctx context.Context, t target, sql string, args []any, kind int) (c front.Call, send []any, err error) {
	def, err := fe.usable(ctx, t)
	if err != nil {
		return c, nil, err
	}
	return fe.bind(ctx, t, def, sql, args, kind)
}

// usable checks the session (session.go) and readies the fence (resolve: catalog),
// once per statement or batch, and returns the session's defaults.
func (fe *fence) usable(ctx context.Context, t target) (*engine.Defaults, error) {
	def, err := fe.session(ctx, t)
	if err != nil {
		return nil, err
	}
	// Every statement: Ready reads the catalog again when the guard said it changed
	// (SF005), when catalog_refresh has passed, or, with a catalog version, when it
	// is time to read the version again; otherwise it costs a few atomic loads.
	if err := fe.f.Ready(ctx, t.querier(fe)); err != nil {
		return nil, err
	}
	return def, nil
}

// bind is prepare after usable: the text the server runs (after the rewriter) is
// checked against the session's settings and server (front.Fence.Usable) and decided
// on the session's defaults, per statement, a batch's each on its own.
func (fe *fence) bind(ctx context.Context, t target, def *engine.Defaults, sql string, args []any, kind int) (c front.Call, send []any, err error) {
	o, args := split(args, kind)
	if o.rewriter != nil {
		// pgx would rewrite after any decision; here the rewritten text is decided.
		// The rewriter gets no connection: with the *pgx.Conn it could run statements
		// unfenced, or prepare one under the name of the text it returns, which pgx
		// would then run in its place (see Tx.Prepare).
		if sql, args, err = o.rewriter.RewriteQuery(ctx, nil, sql, args); err != nil {
			return c, nil, fmt.Errorf("rewrite query failed: %w", err)
		}
	}
	if err := fe.f.Usable(ctx, t.status, sql); err != nil {
		return c, nil, err // the text the server runs, on the server this is
	}
	if c, err = fe.f.Bind(ctx, sql, args, def); err != nil {
		if t.conn != nil {
			err = fe.f.ParseRefused(ctx, t.conn.PgConn(), sql, err)
		}
		return c, nil, err
	}
	if err := optionFree(c, kind); err != nil {
		return c, nil, err
	}
	if kind == forExec && len(args) == 0 && c.Fenced {
		// Without arguments pgx sends the application's text in one simple-protocol
		// round trip and prepares nothing; the epoch written in as a literal keeps it
		// so (engine.Bound.Literal; fe.usable checked the session's pinned settings).
		// Query keeps the parameter: pgx prepares a text without arguments there, and
		// the literal would make every epoch a statement of its own.
		if send, ok := c.Literal(); ok {
			c.Send, c.Args = send, nil
		}
	}
	mode, withMode := fe.sendMode(&o, len(c.Args))
	if kind == forBatch || !withMode && !o.hasFormats {
		return c, c.Args, nil
	}
	send = make([]any, 0, len(c.Args)+3)
	if withMode {
		send = append(send, mode)
	}
	if o.formats != nil {
		send = append(send, o.formats)
	}
	if o.formatsOID != nil {
		send = append(send, o.formatsOID)
	}
	return c, append(send, c.Args...), nil
}

// querier runs the engine's queries (catalog reads, checks) on t in
// QueryExecModeExec, given first so that no argument is taken for one of pgx's
// options: one round trip each on the unnamed statement. Never the simple protocol
// (their arguments are the application's values), and not the pool's statement
// cache either: the catalog is read once per snapshot and a check runs only after an
// unusual result, so preparing them would cost a round trip each and keep a
// statement per query on every connection.
func (t target) querier(fe *fence) front.Querier {
	return pgcatalog.PgxQuery(t.run, pgx.QueryExecModeExec)
}

func (fe *fence) exec(ctx context.Context, t target, sql string, args []any) (pgconn.CommandTag, error) {
	c, send, err := fe.prepare(ctx, t, sql, args, forExec)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := t.run.Exec(ctx, c.Send, send...)
	if err != nil {
		if c.Claim != nil {
			cc := c // on the heap only on this path (the Fence is an interface)
			err = fe.f.ClaimError(ctx, t.querier(fe), &cc, err)
		}
		return tag, err
	}
	return tag, fe.after(ctx, t, &c, tag, true)
}

// after runs, once a statement's results are read, the checks of a fenced write
// (affected: the command tag's count) and the catalog's re-read after DDL. wrote
// says whether the tag counts the statement's writes (not EXPLAIN's).
func (fe *fence) after(ctx context.Context, t target, c *front.Call, tag pgconn.CommandTag, wrote bool) error {
	if c.Fenced && wrote {
		if n := tag.RowsAffected(); c.NeedsCheck(n) {
			cc := *c // c stays on the caller's stack at the common, unchecked end
			if err := fe.f.Check(ctx, t.querier(fe), &cc, n); err != nil {
				return err
			}
		}
	}
	if eff := c.D.Catalog(); eff != 0 {
		return fe.f.Changed(ctx, t.querier(fe), eff, t.catalogPending())
	}
	return nil
}

// catalogPending is t's catalog state for front.Fence.Changed; a pool's statement
// outside a transaction has none that outlives it.
func (t target) catalogPending() *bool {
	if t.pending == nil {
		return new(bool)
	}
	return t.pending
}

// query sends a statement whose rows the caller reads; done runs once the rows are
// closed (the pool's release).
func (fe *fence) query(ctx context.Context, t target, sql string, args []any, done func(error)) (pgx.Rows, error) {
	c, send, err := fe.prepare(ctx, t, sql, args, forQuery)
	if err != nil {
		if done != nil {
			done(err)
		}
		return errRows{err}, err
	}
	inner, err := t.run.Query(ctx, c.Send, send...)
	r := &rows{inner: inner, fe: fe, t: t, c: c, ctx: ctx, done: done}
	if err != nil {
		r.finish()
		return errRows{r.err}, r.err
	}
	return r, nil
}
