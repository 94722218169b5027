// Package front is the seam between sqlfence and the fronts that send statements to
// PostgreSQL: the database/sql driver in the root package, and pgxfence.
//
// A front does two things and only those: it asks a Fence what to send, and it
// sends it and reads the result. Everything that decides — the policy, the catalog
// snapshot, the engine and its cache, what a context's epoch and claim mean, the
// errors, the observer's events and shadow mode — is behind Fence, implemented once
// in package sqlfence. A third front is a file that calls these methods in order:
//
//	chk, def, err := f.Session(ctx, q, pc) // once per new session, before anything else
//	err = chk()                            // before each later statement, when chk is not nil
//	f.Ready(ctx, q, idle)                  // before each statement: resolve: catalog, read when stale
//	err := f.Usable(ctx, status, sql)      // each text the server runs: the session reads it as sqlfence parses it
//	c, err := f.Bind(ctx, sql, args, def)  // what to send: c.Send with c.Args, or an error
//	err = f.ParseRefused(ctx, pc, sql, err) // when Bind refused: the server's own parse error
//	…send c.Send with c.Args…
//	err = f.ClaimError(ctx, q, &c, err)      // when the server refused it (every time)
//	err = f.Check(ctx, q, &c, rowsAffected)  // after it ran, when c.NeedsCheck
//	err = f.Changed(ctx, q, c.D.Catalog())   // after it ran, when it changed the catalog
//
// A Fence is safe for concurrent use. The interface lives in an internal package so
// that the root package's documentation shows none of it.
package front

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// Querier runs one query on the front's connection and returns every row (bigint as
// int64, text as string, bool as bool): how the engine's checks and the catalog
// reads reach the server.
type Querier = engine.Querier

// Fence is one connector's sqlfence.
type Fence interface {
	// Session checks a new session once, before its first statement (BEGIN
	// included) and before Ready reads anything on it, in one query: a server behind
	// the history the connector has seen (an older timeline, or a primary behind
	// WAL already written on its timeline), of another cluster, or whose session
	// commits before it is safe (synchronous_commit off or local) is refused with
	// the *sqlfence.Error to return; the front must then close the connection, never
	// hand it out again. Otherwise the session's position is part of the history.
	// check, when not nil, is called before each later statement on the session (an
	// atomic load): it refuses the session once the connector has seen a newer
	// timeline than its primary's, and the front then closes it as well.
	//
	// conn is q's pgx connection, nil on another driver: a fresh connector whose DSN
	// names more than one host reads the position of the others on connections of
	// conn's config first, and starts its history from the newest.
	//
	// def are the session's defaults of the pinned settings (what RESET ALL returns
	// them to), read in the same query: every Bind on the session takes them.
	Session(ctx context.Context, q Querier, conn *pgx.Conn) (check func() error, def *engine.Defaults, err error)
	// Ready reads the catalog through q when the policy says resolve: catalog and
	// it has not been read yet. No statement may be decided before it succeeds.
	// Called before each statement, it also reads the catalog again when it may
	// have changed (another session's DDL: the guard said so, or catalog_refresh
	// passed); otherwise it costs two atomic loads. idle says that q's session is
	// outside a transaction (pgx's TxStatus 'I'): a statement there sees every
	// committed change, so catalog_refresh asks it whether the catalog moved rather
	// than reading it in full. Not called while the session's own DDL is
	// uncommitted (Changed's pending): its own reads follow it.
	Ready(ctx context.Context, q Querier, idle bool) error
	// SetDial gives the fence a way to open a connection of its own (and the
	// function that closes it), called once before the first statement: the
	// catalog is read there, not on q, whenever q's session is inside a
	// transaction, whose snapshot (REPEATABLE READ) may predate DDL another session
	// committed — and predate the catalog version, which is no row and is read
	// current — so that no snapshot older than one already read is ever used. Without
	// it the catalog is read on q.
	SetDial(dial func(ctx context.Context) (Querier, func(), error))
	// Usable checks, before each statement, that the session's reported settings
	// (status: the server's ParameterStatus) still read text as sqlfence parses it,
	// and that its server reads query as sqlfence's parser does. query is the text
	// the server runs (after any rewriting): in a batch, each statement's. A
	// connection that fails the settings' check must not be used again.
	Usable(ctx context.Context, status func(string) string, query string) error
	// Bind decides query and binds it to ctx's epoch and claim. args are the
	// application's positional arguments ($1…$n), after any rewriting the front
	// applied; options the front removed are not among them, and the front sends
	// none that its client library would read as an option. def are the session's
	// defaults (from Session; nil on a driver sqlfence reads nothing through): a
	// statement that resets a pinned setting is judged against them. The error is
	// the *sqlfence.Error to return, with nothing sent.
	Bind(ctx context.Context, query string, args []any, def *engine.Defaults) (Call, error)
	// ParseRefused is err, Bind's error, unless it refuses text sqlfence's parser
	// rejects: then, asked on pc without executing anything (ServerParse), the
	// server's own error for the text, or the refusal saying the server reads it.
	ParseRefused(ctx context.Context, pc *pgconn.PgConn, query string, err error) error
	// Check explains the result of a fenced statement that affected affected rows
	// (only when c.NeedsCheck): nil, ErrFenced, ErrAlreadyWritten or the check's
	// failure; a fence cancels the handler (sqlfence.OnFenced).
	Check(ctx context.Context, q Querier, c *Call, affected int64) error
	// ClaimError explains the server's refusal of any statement the front sent: a
	// superseded claim is ErrFenced; the guard's word that the catalog changed
	// (SF005, SF001, a column or table gone) has the next Ready read it again, and
	// SF005 becomes the retryable SF525; other errors pass unchanged. Without a
	// claim it sends nothing.
	ClaimError(ctx context.Context, q Querier, c *Call, err error) error
	// Changed reads the catalog again after a statement that changed it
	// (eff: c.D.Catalog(), or CatalogTxEnd when a transaction ends).
	Changed(ctx context.Context, q Querier, eff engine.CatalogEffect, pending *bool) error
	// Raw allows a front to hand out its raw, unfenced connection: only under
	// sqlfence.Unfenced(ctx, reason) with `unfenced: allow`; else the *sqlfence.Error
	// to return. The observer hears of it either way.
	Raw(ctx context.Context) error
	// Log is the connector's logger (sqlfence.WithLogger).
	Log() *slog.Logger
}

// Call is one execution: what the engine bound, and the arguments to send.
type Call struct {
	engine.Bound
	// Args are the arguments to send with Send: the application's, then, for a
	// fenced statement, the epoch and (under a claim) the claim's key.
	Args []any
	// User are the application's arguments, for the checks' queries.
	User []any
	// Exact: the context asks for exact accounting (sqlfence.WithExactAccounting).
	Exact bool
}

// NeedsCheck reports whether a statement that affected affected rows must be
// explained by Check.
func (c *Call) NeedsCheck(affected int64) bool { return c.Bound.NeedsCheck(affected, c.Exact) }

// Open makes the Fence for a *sqlfence.Policy and sqlfence.ConnectorOptions (as
// []any, so that this package needs nothing of the root's); package sqlfence sets it
// at init. A front outside the root package imports sqlfence, so Open is set
// before the front can call it.
var Open func(policy any, opts []any) (Fence, error)
