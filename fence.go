// One connector's sqlfence, shared by its fronts: the compiled policy, the catalog
// snapshot and the enforcer made for it, swapped as a whole when the catalog is read
// again. It implements internal/front's Fence, the seam every front calls (the
// database/sql connector in this package, pgxfence).

package sqlfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

func init() { front.Open = openFence }

// openFence is front.Open: the Fence for a *Policy and ConnectorOptions.
func openFence(policy any, opts []any) (front.Fence, error) {
	p, ok := policy.(*Policy)
	if !ok || p == nil {
		return nil, errors.New("sqlfence: nil policy; load one with sqlfence.LoadPolicy or sqlfence.ParsePolicy")
	}
	copts := make([]ConnectorOption, len(opts))
	for i, o := range opts {
		if copts[i], ok = o.(ConnectorOption); !ok {
			return nil, fmt.Errorf("sqlfence: option %d is a %T, not a sqlfence.ConnectorOption", i+1, o)
		}
	}
	return newFence(p, copts)
}

type fence struct {
	cfg  connectorConfig
	base *engine.Policy // the compiled policy, before resolve: catalog extends it
	// enforcer is swapped as a whole when the catalog is read again: the new one
	// comes with an empty decision cache, and each conn drops its memo when it sees
	// the swap (conn.lookup), so no decision made under an old snapshot is reused.
	enforcer atomic.Pointer[enforcer]

	// resolveMu serialises the catalog reads of resolve: catalog; resolved records
	// that the first succeeded, so a failure (the database not up yet) is retried.
	resolveMu sync.Mutex
	resolved  bool
	// retired holds the counts of the caches the catalog reads replaced, so that
	// CacheStatsOf's counters only grow.
	retired CacheStats

	// ready: the first catalog read succeeded (resolved, readable without the lock).
	// stale: read the catalog again before the next statement — the guard refused a
	// statement decided on an older catalog version (SF005) or a write the driver let
	// through (SF001). readAt: when it was last read, for catalog_refresh.
	ready  atomic.Bool
	stale  atomic.Bool
	readAt atomic.Int64
	// fingerprint is the catalog's fingerprint (pgcatalog.Fingerprint) read before the
	// last read of the catalog, "" when it was read without one; under resolveMu.
	// catalog_refresh compares it with the catalog's of the moment and reads the
	// catalog again only when they differ (catchUp).
	fingerprint string
	// checks, reads and kept count the fingerprints read, the full reads of the
	// catalog, and those that found the rows in use (for tests and benchmarks).
	checks, reads, kept atomic.Int64
	// checkedAt: when the catalog version was last read (versionCheck).
	checkedAt atomic.Int64
	// dueAt is when due turns true, from the policy in use and readAt or checkedAt
	// (schedule): before each statement one load, not three pointers to follow.
	dueAt atomic.Int64
	// claimsKnown: every unqualified claim table's schema is known (claimschema.go).
	claimsKnown atomic.Bool
	// dial opens a fresh connection of the inner connector for reading the catalog
	// again (the database/sql connector sets it): outside the application's
	// transaction, whose snapshot may predate the DDL, and free of its aborted state.
	dial func(ctx context.Context) (front.Querier, func(), error)
	// dialIdle: catchUp reads on a dialed connection even when the session is
	// idle (the database/sql connector: free of the session's settings too); else
	// (SetDial, pgxfence) only from inside a transaction.
	dialIdle bool

	// history is where the servers this connector used stood (history.go).
	history history
	// probe reads the DSN's other hosts before the first session is judged (probe.go).
	probe hostProbe
}

var _ front.Fence = (*fence)(nil)

// newFence checks the options and compiles the policy.
func newFence(p *Policy, opts []ConnectorOption) (*fence, error) {
	cfg := connectorConfig{logger: slog.Default(), cacheEntries: engine.DefaultCacheEntries, cacheBytes: engine.DefaultCacheBytes, shadowEvery: defaultShadowSummary}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("sqlfence: NewConnector: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	fp, err := p.compile()
	if err != nil {
		return nil, err
	}
	if fp.Enforce == engine.EnforceShadow {
		cfg.shadow = newShadowTally(cfg.shadowEvery)
	}
	cfg.claims = &claimSchemas{}
	f := &fence{cfg: cfg, base: fp}
	f.cfg.catalogStale = &f.stale
	f.enforcer.Store(newEnforcer(fp, f.cfg))
	if !fp.ResolveCatalog {
		logUnresolved(cfg.logger, fp.Source)
	}
	return f, nil
}

// logUnresolved says once per connector what resolve: none leaves unseen: it is an
// explicit choice, and the writes it lets through unfenced must not be a surprise.
func logUnresolved(l *slog.Logger, source string) {
	l.Warn("sqlfence: resolve: none: this connector does not read the catalog, so it does not check that the protected tables exist "+
		"with a bigint NOT NULL epoch column, writes through their partitions, inheritance children, parents and views are sent unfenced, "+
		"and statements that fire triggers, rules or foreign-key actions, or call functions, that write protected tables are not refused; "+
		"install the guard (sqlfence guard --apply) to have the database reject those writes, or remove resolve: none from the policy",
		"policy", source)
}

// current is the enforcer for the catalog as last read.
func (f *fence) current() *enforcer { return f.enforcer.Load() }

// SetDial is how the front opens a connection of its own to read the catalog on,
// outside the application's transaction (front.Fence.SetDial).
func (f *fence) SetDial(dial func(ctx context.Context) (front.Querier, func(), error)) { f.dial = dial }

// Ready reads the catalog before the first statement, and again before a statement
// when it may have changed: the guard said so (stale), or, where the database has no
// catalog version, catalog_refresh has passed. Otherwise it costs two atomic loads.
// idle says that q's session is outside a transaction, so that a statement on it
// sees every committed change: catalog_refresh then asks it whether the catalog
// changed, rather than a new connection.
func (f *fence) Ready(ctx context.Context, q front.Querier, idle bool) error {
	// The claim tables' schemas, read on the first session, until every one is known.
	if !f.claimsKnown.Load() {
		known, err := f.cfg.claims.resolve(ctx, q, f.base)
		if err != nil {
			return err
		}
		f.claimsKnown.Store(known)
	}
	if !f.base.ResolveCatalog || f.ready.Load() && !f.stale.Load() && !f.due() {
		return nil
	}
	f.resolveMu.Lock()
	defer f.resolveMu.Unlock()
	if !f.resolved {
		if !idle && f.dial != nil {
			// Inside the application's transaction the read would take its snapshot
			// (REPEATABLE READ: one older than the version, which is read past it),
			// so it goes on a connection of its own.
			dq, done, err := f.dial(ctx)
			if err != nil {
				return err
			}
			defer done()
			q = dq
		}
		return f.reload(ctx, q)
	}
	if !f.stale.Load() && !f.due() {
		return nil // another connection read it meanwhile
	}
	if err := f.catchUp(ctx, q, idle); err != nil {
		return fmt.Errorf("sqlfence: the catalog may have changed, and reading it again failed, so the statement was not sent: %w", err)
	}
	return nil
}

// due reports whether catalog_refresh asks for a new read, where the database has no
// catalog version, so that DDL of other sessions is seen within the period; or,
// where it has one, whether versionCheck has passed since the version was last read.
func (f *fence) due() bool { return time.Now().UnixNano() >= f.dueAt.Load() }

// fresh reports whether Ready has nothing to do: the claim tables' schemas are known,
// the catalog was read, nothing said it changed and no check is due. It is each
// statement's path, and follows no pointer out of the fence.
func (f *fence) fresh() bool {
	return f.claimsKnown.Load() && f.ready.Load() && !f.stale.Load() && !f.due()
}

// schedule sets dueAt for the policy in use and the last reads; under resolveMu,
// after every change of readAt, checkedAt or the enforcer.
func (f *fence) schedule() {
	p := f.current().policy
	switch {
	case p.CatalogVersion > 0:
		f.dueAt.Store(f.checkedAt.Load() + int64(versionCheck))
	case p.CatalogRefresh > 0 && p.CatalogMissing != "":
		f.dueAt.Store(f.readAt.Load() + int64(p.CatalogRefresh))
	default:
		f.dueAt.Store(math.MaxInt64)
	}
}

// versionCheck is how often, at most, a connector reads the catalog version again
// where the database has one, before a statement: one query (on a fresh connection
// for the database/sql connector). The version moves with every DDL statement the
// event triggers see, and the guard refuses what was decided before it (SF005); the
// read finds what they cannot see — the event triggers disabled, dropped, or no
// longer enabled always, DDL made meanwhile (their rows changed), or the guard's
// trigger disabled on a protected table — and reads the catalog again, which then
// says what is missing (SF524). So DDL that moved no version is seen within
// versionCheck.
const versionCheck = time.Second

// catchUp reads the catalog again over a fresh connection when the front gives one.
// With a catalog version, a version that has not moved keeps the snapshot (the
// guard's SF001 may have had nothing to do with DDL). Where catalog_refresh's period
// alone asks for it, a fingerprint that has not moved keeps it: one query, on q
// itself when idle (outside a transaction, so it sees every committed change), the
// snapshot, the decision cache and every connection's memo untouched.
func (f *fence) catchUp(ctx context.Context, q front.Querier, idle bool) error {
	defer f.schedule()
	cur := f.current().policy
	start := time.Now().UnixNano()
	var done func()
	defer func() {
		if done != nil {
			done()
		}
	}()
	dial := func() error {
		if f.dial == nil || done != nil || idle && !f.dialIdle {
			return nil
		}
		dq, d, err := f.dial(ctx)
		if err != nil {
			return err
		}
		q, done = dq, d
		return nil
	}
	if !f.stale.Load() && cur.CatalogVersion == 0 && cur.CatalogRefresh > 0 {
		if !idle {
			if err := dial(); err != nil {
				return err
			}
		}
		// A fingerprint that cannot be read (a role denied a catalog) is no answer:
		// the catalog is read in full, as without one.
		f.checks.Add(1)
		if got, err := pgcatalog.Fingerprint(ctx, q); err == nil {
			if got == f.fingerprint {
				f.readAt.Store(start)
				return nil
			}
		}
	}
	// The snapshot is read on a fresh connection: outside the application's
	// transaction and free of its session's settings, as the first was.
	if err := dial(); err != nil {
		return err
	}
	if cur.CatalogVersion > 0 {
		f.stale.Store(false)
		start := time.Now().UnixNano()
		v, err := pgcatalog.Version(ctx, q)
		if err != nil {
			f.stale.Store(true)
			return err
		}
		if v.Same(cur.CatalogRead) {
			f.checkedAt.Store(start)
			return nil
		}
	}
	return f.reloadAt(ctx, q, start)
}

// refresh reads the catalog again through q, after DDL through the driver, and
// swaps in an enforcer for the new snapshot.
func (f *fence) refresh(ctx context.Context, q front.Querier) error {
	f.resolveMu.Lock()
	defer f.resolveMu.Unlock()
	return f.reload(ctx, q)
}

func (f *fence) reload(ctx context.Context, q front.Querier) error {
	return f.reloadAt(ctx, q, time.Now().UnixNano())
}

// reloadAt reads the catalog and swaps in an enforcer for it, unless it found the
// rows the enforcer in use was made from: then that one, its decision cache and the
// connections' memos stay (decisions depend on nothing else). start is when the
// read was asked for: catalog_refresh's period counts from it.
func (f *fence) reloadAt(ctx context.Context, q front.Querier, start int64) error {
	defer f.schedule()
	// Cleared first: the guard's word that arrives during the read is kept.
	f.stale.Store(false)
	f.fingerprint = ""
	f.reads.Add(1)
	p, err := engine.Resolve(ctx, q, f.base)
	var ce *engine.CatalogError
	if err != nil && f.base.Enforce == engine.EnforceShadow && errors.As(err, &ce) {
		// Shadow mode reports and never enforces: it says once what enforce: on would
		// refuse every statement for, and decides by the policy's names alone.
		f.cfg.logger.Warn("sqlfence shadow: would refuse every statement: "+ce.Error(), "code", ce.Problems[0].Code)
		f.resolved = true
		f.ready.Store(true)
		f.readAt.Store(start)
		return nil
	}
	if err != nil {
		f.stale.Store(true)
		return catalogError(err)
	}
	f.readAt.Store(start)
	f.checkedAt.Store(start)
	f.fingerprint = p.CatalogFingerprint
	if f.resolved && p.SameCatalog(f.current().policy) {
		f.kept.Add(1)
		return nil
	}
	e := newEnforcer(p, f.cfg)
	if old := f.enforcer.Swap(e); old != nil {
		st := old.eng.Stats()
		f.retired.Hits += st.Hits
		f.retired.Misses += st.Misses
		f.retired.Evictions += st.Evictions
	}
	f.resolved = true
	f.ready.Store(true)
	return nil
}

func (f *fence) Usable(ctx context.Context, status func(string) string, query string) error {
	err := checkPinned(status)
	if err == nil && query != "" {
		// The server's version: a construct an older server reads as a function call.
		server := 0
		if status != nil {
			server = engine.ServerVersionNum(status("server_version"))
		}
		if server < engine.ParserVersion {
			err = olderServer(f.current().eng.Decide(query), server, query)
		}
	}
	if err == nil {
		return nil
	}
	if e := f.current(); e.observing {
		e.emit(ctx, Event{Outcome: OutcomeRefuse, Statement: query, Err: err}, false) // refused in shadow mode too
	}
	return err
}

// olderServer refuses, for a front that binds the parser's decision d (pgxfence),
// a statement that a server of version server reads otherwise: its refusal there,
// or SF706 when that reading would be sent otherwise. Where both readings pass, the
// text goes as it is, and means on that server what that server's reading passed.
func olderServer(d *engine.Decision, server int, query string) *Error {
	od := d.OnServer(server)
	switch {
	case od == d:
		return nil
	case od.Act() == engine.ActRefuse:
		return publicError(od.Refusal().ForStatement(query, 0))
	case od.Act() == engine.ActPass && d.Act() == engine.ActPass:
		return nil
	}
	return publicError(&engine.Error{Kind: engine.KindRefused, Code: rulecode.ServerVersion, Statement: query, Table: od.TableNames(),
		Reason: "this connection's server (version " + strconv.Itoa(server/10000) + ") reads the statement otherwise than sqlfence's parser (PostgreSQL 17's grammar) — a word that is a keyword to the parser is an identifier or a function name there — and pgxfence fences a statement as the parser reads it",
		Fix:    "use the registered driver \"sqlfence\" (database/sql), which fences the statement as the server reads it, or write it without the newer keyword"})
}

func (f *fence) Bind(ctx context.Context, query string, args []any, def *engine.Defaults) (front.Call, error) {
	e := f.current()
	d := e.eng.Decide(query).InSession(def)
	b, s, err := e.bindCall(ctx, d, query, len(args), nil)
	if err != nil {
		return front.Call{}, err
	}
	c := front.Call{Bound: b, Args: args, User: args}
	if !b.Fenced {
		return c, nil
	}
	c.Exact = exactAccounting(ctx)
	extra := 1
	if b.Claim != nil {
		extra = 2
	}
	c.Args = make([]any, len(args), len(args)+extra)
	copy(c.Args, args)
	c.Args = append(c.Args, s.Epoch)
	if b.Claim != nil {
		c.Args = append(c.Args, b.Claim.Key())
	}
	return c, nil
}

func (f *fence) ParseRefused(ctx context.Context, pc *pgconn.PgConn, query string, err error) error {
	return parseRefused(ctx, pc, query, err)
}

func (f *fence) Check(ctx context.Context, q front.Querier, c *front.Call, affected int64) error {
	return f.current().checkBound(ctx, q, &c.Bound, c.User, affected, c.Exact)
}

func (f *fence) ClaimError(ctx context.Context, q front.Querier, c *front.Call, err error) error {
	return f.current().claimErrorBound(ctx, q, &c.Bound, err)
}

func (f *fence) Changed(ctx context.Context, q front.Querier, eff engine.CatalogEffect, pending *bool) error {
	reread := eff&engine.CatalogDDL != 0 || *pending && eff&(engine.CatalogTxEnd|engine.CatalogTxUndo) != 0
	*pending = eff&engine.CatalogDDL != 0 || *pending && eff&engine.CatalogTxEnd == 0
	if !reread {
		return nil
	}
	if err := f.refresh(ctx, q); err != nil {
		*pending = true
		return fmt.Errorf("sqlfence: the statement ran, but reading the catalog again after it failed (decisions use the previous snapshot until it succeeds): %w", err)
	}
	return nil
}

func (f *fence) Raw(ctx context.Context) error { return f.current().rawAllowed(ctx) }

func (f *fence) Log() *slog.Logger { return f.cfg.logger }

// catalogError is Resolve's error as the connector returns it for every statement:
// a policy that does not match the database is ErrRefused (nothing is sent), with
// the first problem's code and table and every problem in the reason.
func catalogError(err error) error {
	var ce *engine.CatalogError
	if !errors.As(err, &ce) || len(ce.Problems) == 0 {
		return err
	}
	first := ce.Problems[0]
	return &Error{Kind: ErrRefused, Code: first.Code, Table: first.Table, Reason: strings.TrimPrefix(ce.Error(), "sqlfence: ")}
}
