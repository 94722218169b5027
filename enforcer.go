// What the fronts share per catalog snapshot: the engine, and what turns its answers
// into what a program sees (the context read into a session, *Error, events, shadow
// mode, the log).

package sqlfence

import (
	"context"
	"database/sql/driver"
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
	claims    *claimSchemas                // the connector's (claimschema.go)
	stale     *atomic.Bool                 // the fence's: read the catalog again (guardSaid)
	names     sync.Map                     // *engine.Table → its name in events (observe.go)
}

func newEnforcer(p *engine.Policy, cfg connectorConfig) *enforcer {
	return &enforcer{eng: engine.New(p, cfg.cacheEntries, cfg.cacheBytes), policy: p, log: cfg.logger,
		observer: cfg.observer, shadow: cfg.shadow, observing: cfg.observer != nil || cfg.shadow != nil, claims: cfg.claims, stale: cfg.catalogStale}
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
//
// oneTrip asks, for a statement the application sent without arguments to a pgx
// connection whose pinned settings are checked before every statement (conn.usable),
// that a fenced text go out in one round trip, as the application's text would: with
// the epoch written in as a literal (engine.Bound.Literal), so that there is still no
// argument and pgx sends it in the simple protocol, or else (under a claim, whose key
// is a string) with its parameters in oneTripMode.
func (f *enforcer) bind(ctx context.Context, d *engine.Decision, query string, args []driver.NamedValue, oneTrip bool) (call, error) {
	if d.Act() == engine.ActPass && !d.Carries() {
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
	if oneTrip && len(args) == 0 && !b.Carried {
		if send, ok := b.Literal(); ok {
			c.Send = send // no argument: pgx sends it as the application's own text
			return c, nil
		}
	}
	// A new slice of exactly the right size: the application's slice must not be
	// written, and append would round its capacity up to the next size class.
	extra, lead := 1, 0
	if b.Claim != nil {
		extra = 2
	}
	if oneTrip && len(args) == 0 {
		lead = 1
	}
	c.args = make([]driver.NamedValue, lead+len(args)+extra)
	if lead == 1 {
		c.args[0] = driver.NamedValue{Value: oneTripMode}
	}
	copy(c.args[lead:], args)
	// The epoch as WithEpoch boxed it: boxing it again would allocate on every
	// execution (Go only has preallocated boxes for 0…255).
	c.args[lead+len(args)] = driver.NamedValue{Ordinal: len(args) + 1, Value: ctx.Value(epochKey{})}
	if b.Claim != nil {
		c.args[lead+len(args)+1] = driver.NamedValue{Ordinal: len(args) + 2, Value: b.Claim.Key()}
	}
	return c, nil
}

// oneTripMode is how a fenced statement that the application sent without
// arguments goes out on a pgx connection when its epoch cannot be written in as a
// literal (under a claim). Without arguments pgx sends a text in one
// simple-protocol round trip and keeps nothing on the server; the epoch parameter the
// fence adds would make every new text (values inlined by an ORM) a prepare and an
// execute of a new named statement: an extra round trip, and a server-side statement
// per text. pgx.QueryExecModeExec sends the text and its parameters in one round trip
// on the unnamed statement, leaving nothing behind. The parameters still travel apart
// from the text, so the server receives the text sqlfence verified, byte for byte;
// their types are inferred by the server from the text (the epoch is cast to bigint
// there). It is not used for Query, whose result formats pgx chooses by mode.
var oneTripMode any = pgx.QueryExecModeExec

// bindCall is what every front's bind shares: the engine binds d to the context's
// session, and the outcome is noted, logged, shadowed or turned into the *Error to
// return. nargs is the number of the application's positional arguments; argRefusal
// is the front's refusal of the arguments themselves, which applies to a fenced write.
// In shadow mode the bound call sends the application's text unchanged.
func (f *enforcer) bindCall(ctx context.Context, d *engine.Decision, query string, nargs int, argRefusal *engine.Error) (engine.Bound, engine.Session, error) {
	unchanged := engine.Bound{D: d, Query: query, Send: query}
	if d.Act() == engine.ActPass && !d.Carries() {
		if f.observing {
			f.note(ctx, Event{Outcome: OutcomePass, Statement: query})
		}
		return unchanged, engine.Session{}, nil
	}
	s := sessionOf(ctx)
	if s.Claim != nil {
		s.Claim = f.claims.qualify(s.Claim, f.policy)
	}
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
	case !b.Fenced && b.Carried:
		if f.observing {
			f.note(ctx, Event{Outcome: OutcomeFence, Table: b.D.CarriedTable("", ""), Statement: query, Epoch: s.Epoch})
		}
		if f.shadowing() {
			return unchanged, s, nil
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

// rawAllowed hands out a front's raw, unfenced connection only on the explicit
// unfenced path: ctx from Unfenced and `unfenced: allow` in the policy. Either way
// the observer hears of it, and an allowed hand-out is logged.
func (f *enforcer) rawAllowed(ctx context.Context) error {
	reason, ok := unfencedReason(ctx)
	if !ok || !f.policy.AllowUnfenced {
		err := &Error{Kind: ErrUnfenced, Code: rulecode.RawConnDenied, Reason: "the raw connection bypasses the fence",
			Fix: "pass a context from sqlfence.Unfenced(ctx, reason) and set `unfenced: allow` in the policy"}
		if f.observing {
			f.emit(ctx, Event{Outcome: OutcomeUnfenced, Err: err}, false) // refused in shadow mode too
		}
		return err
	}
	f.log.WarnContext(ctx, "sqlfence: raw connection handed out", "code", rulecode.RawConnAllowed, "reason", reason)
	if f.observing {
		f.noteLetThrough(ctx, rulecode.RawConnAllowed, "", "")
	}
	return nil
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
