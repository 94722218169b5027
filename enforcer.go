package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// enforcer is what the fronts share for one connector and catalog snapshot: the
// engine that decides, and what turns its answers into what a program sees — the
// context's epoch and claim read into a session, errors as *Error, the observer's
// events, shadow mode's tally and the log.
type enforcer struct {
	eng    *engine.Engine
	policy *engine.Policy // eng's
	log    *slog.Logger

	observer  func(context.Context, Event) // WithObserver's, or nil
	shadow    *shadowTally                 // under enforce: shadow, else nil
	observing bool                         // either is set: call note (observe.go)
	stale     *atomic.Bool                 // the fence's: read the catalog again (guardSaid)
	names     sync.Map                     // *engine.Table → its name in events (observe.go)
}

func newEnforcer(p *engine.Policy, cfg connectorConfig) *enforcer {
	return &enforcer{eng: engine.New(p, cfg.cacheEntries, cfg.cacheBytes), policy: p, log: cfg.logger,
		observer: cfg.observer, shadow: cfg.shadow, observing: cfg.observer != nil || cfg.shadow != nil, stale: cfg.catalogStale}
}

// shadowing reports enforce: shadow: statements are sent as written.
func (f *enforcer) shadowing() bool { return f.policy.Enforce == engine.EnforceShadow }

// sessionOf reads what the context says about the statement's epoch and claim.
func sessionOf(ctx context.Context) engine.Session {
	var s engine.Session
	switch v := ctx.Value(epochKey{}).(type) {
	case int64:
		s.Epoch, s.HasEpoch = v, true
	case invalidEpoch:
		s.Epoch, s.BadEpoch = int64(v), true
	}
	s.Unfenced, s.HasUnfenced = unfencedReason(ctx)
	s.Claim = claimFrom(ctx)
	s.ClaimHelper = claimctx.From(ctx)
	return s
}

// call is one execution of a decided statement: what the engine bound, and the
// arguments to send with it.
type call struct {
	engine.Bound
	args []driver.NamedValue // the arguments to send: the application's, then the epoch (and the claim's key)
	user []driver.NamedValue // the application's arguments without pgx's option values
}

// bind decides what one execution sends. Refusals and unfenced writes become errors
// here, before anything reaches the server; in shadow mode they are logged and the
// application's text is sent unchanged. The call is returned by value so that it can
// live on the caller's stack: at a cache hit the only allocation left is the argument
// slice with the epoch appended.
func (f *enforcer) bind(ctx context.Context, d *engine.Decision, query string, args []driver.NamedValue) (call, error) {
	if d.Act() == engine.ActPass {
		if f.observing {
			f.note(ctx, Event{Outcome: OutcomePass, Statement: query})
		}
		return call{Bound: engine.Bound{D: d, Query: query, Send: query}, args: args}, nil
	}
	user, nargs, aerr := userArgs(d, query, args)
	b, _, err := f.bindCall(ctx, d, query, nargs, aerr)
	if err != nil {
		return call{}, err
	}
	c := call{Bound: b, args: args, user: user}
	if !b.Fenced {
		return c, nil
	}
	// A new slice of exactly the right size: the application's slice must not be
	// written, and append would round its capacity up to the next size class.
	extra := 1
	if b.Claim != nil {
		extra = 2
	}
	c.args = make([]driver.NamedValue, len(args)+extra)
	copy(c.args, args)
	// The epoch as WithEpoch boxed it: boxing it again would allocate on every
	// execution (Go only has preallocated boxes for 0…255).
	c.args[len(args)] = driver.NamedValue{Ordinal: len(args) + 1, Value: ctx.Value(epochKey{})}
	if b.Claim != nil {
		c.args[len(args)+1] = driver.NamedValue{Ordinal: len(args) + 2, Value: b.Claim.Key()}
	}
	return c, nil
}

// bindCall is what every front's bind shares: the engine binds d to the context's
// session, and the outcome is noted, logged, shadowed or turned into the *Error to
// return. nargs is the number of the application's positional arguments; argRefusal
// is the front's refusal of the arguments themselves, which applies to a fenced write.
// In shadow mode the bound call sends the application's text unchanged.
func (f *enforcer) bindCall(ctx context.Context, d *engine.Decision, query string, nargs int, argRefusal *engine.Error) (engine.Bound, engine.Session, error) {
	unchanged := engine.Bound{D: d, Query: query, Send: query}
	if d.Act() == engine.ActPass {
		if f.observing {
			f.note(ctx, Event{Outcome: OutcomePass, Statement: query})
		}
		return unchanged, engine.Session{}, nil
	}
	s := sessionOf(ctx)
	if argRefusal != nil {
		nargs = d.EpochParam() - 1 // the arguments' own refusal comes first
	}
	b, err := f.eng.Bind(d, query, s, nargs)
	if err == nil && argRefusal != nil && b.Fenced {
		err = argRefusal.ForStatement(query, s.Epoch)
	}
	if err != nil {
		perr := publicError(err)
		if f.observing {
			f.noteError(ctx, perr, query, s.Epoch)
		}
		if f.shadowing() {
			return unchanged, s, nil // logged by the shadow tally
		}
		return engine.Bound{}, s, perr
	}
	switch {
	case b.LetThrough:
		f.log.WarnContext(ctx, "sqlfence: unfenced write", "code", rulecode.UnfencedAllowed, "table", d.TableNames(), "reason", s.Unfenced, "statement", abbreviate(query, 200))
		if f.observing {
			f.noteLetThrough(ctx, rulecode.UnfencedAllowed, d.TableNames(), query)
		}
		return b, s, nil
	case !b.Fenced:
		if f.observing {
			f.note(ctx, Event{Outcome: OutcomePass, Statement: query, Epoch: s.Epoch})
		}
		return b, s, nil
	}
	if e := f.uncheckedCatalog(b.D, query, s.Epoch); e != nil {
		if f.observing {
			f.noteError(ctx, e, query, s.Epoch)
		}
		if f.shadowing() {
			return unchanged, s, nil // logged by the shadow tally
		}
		return engine.Bound{}, s, e
	}
	if f.observing {
		f.note(ctx, Event{Outcome: OutcomeFence, Table: f.tableName(b.D), Statement: query, Epoch: s.Epoch})
	}
	if f.shadowing() {
		unchanged.D = b.D
		return unchanged, s, nil
	}
	return b, s, nil
}

// checkRewriter refuses an argument that rewrites the SQL text (a pgx query rewriter,
// pgx.NamedArgs among them): the text sent would not be the text sqlfence decided on.
// database/sql asks every argument of every statement through CheckNamedValue before
// the statement reaches the driver, so this holds for reads and unprotected writes too.
func (f *enforcer) checkRewriter(nv *driver.NamedValue) error {
	if _, ok := nv.Value.(pgx.QueryRewriter); !ok {
		return nil
	}
	err := &Error{Kind: ErrRefused, Code: rulecode.RewritingArgument,
		Reason: "an argument that rewrites the SQL text (a pgx query rewriter such as pgx.NamedArgs): the text sent would not be the text sqlfence checked",
		Fix:    "use positional $n parameters"}
	if f.observing {
		f.noteError(context.Background(), err, "", 0)
	}
	if f.shadowing() {
		return nil // logged by the shadow tally
	}
	return err
}

// userArgs separates the application's arguments from pgx's option values and
// refuses arguments whose meaning depends on rewriting the query text (named
// arguments, pgx query rewriters): it returns the application's arguments, their
// count, and the refusal that applies if the statement is fenced.
func userArgs(d *engine.Decision, query string, args []driver.NamedValue) ([]driver.NamedValue, int, *engine.Error) {
	options := 0
	for _, a := range args {
		if a.Name != "" {
			return args, len(args), d.RefuseArgs(rulecode.RewritingArgument, query, 0, "named argument "+a.Name, "use positional $n parameters")
		}
		switch a.Value.(type) {
		case pgx.QueryRewriter:
			return args, len(args), d.RefuseArgs(rulecode.RewritingArgument, query, 0, "a pgx query rewriter (such as pgx.NamedArgs)", "use positional $n parameters")
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
			options++
		}
	}
	if options == 0 {
		return args, len(args), nil
	}
	user := make([]driver.NamedValue, 0, len(args)-options)
	for _, a := range args {
		switch a.Value.(type) {
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
		default:
			user = append(user, a)
		}
	}
	return user, len(user), nil
}

// queryConn runs a query on the inner connection, through QueryerContext when it has
// one and through a prepared statement otherwise, so that classification does not
// depend on an optional interface.
func queryConn(ctx context.Context, c driver.Conn, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.(driver.QueryerContext); ok {
		rows, err := q.QueryContext(ctx, query, args)
		if !errors.Is(err, driver.ErrSkip) {
			return rows, err
		}
	}
	var (
		st  driver.Stmt
		err error
	)
	if p, ok := c.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	var rows driver.Rows
	if sq, ok := st.(driver.StmtQueryContext); ok {
		rows, err = sq.QueryContext(ctx, args)
	} else {
		//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
		rows, err = st.Query(values(args))
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return &stmtRows{Rows: rows, stmt: st}, nil
}

// stmtRows closes the statement a query was prepared for along with its rows.
type stmtRows struct {
	driver.Rows
	stmt driver.Stmt
}

func (r *stmtRows) Close() error {
	err := r.Rows.Close()
	if cerr := r.stmt.Close(); err == nil {
		err = cerr
	}
	return err
}

// uncheckedCatalog refuses a fenced write where nothing would tell the driver that
// another session's DDL changed what the write reaches: the database has no catalog
// version (or the guard is not on a protected relation), and the policy sets no
// catalog_refresh period.
func (f *enforcer) uncheckedCatalog(d *engine.Decision, query string, epoch int64) *Error {
	p := f.policy
	if !p.ResolveCatalog || p.CatalogMissing == "" || p.CatalogRefresh > 0 {
		return nil
	}
	return &Error{Kind: ErrRefused, Code: rulecode.CatalogNotInstalled, Table: d.TableNames(), Statement: query, Epoch: epoch,
		Reason: p.CatalogMissing + ", so a trigger, rule, partition, view, foreign key or function another session creates after the connector read the catalog would not be seen before this write",
		Fix:    "install the catalog version with the guard: sqlfence guard --policy " + p.Source + " --apply --dsn <dsn> (as a superuser); or, where that cannot be done, set catalog_refresh: 1s in the policy to read the catalog again at most that often"}
}
