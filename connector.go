// The connector: what sql.OpenDB holds, one per policy, sharing the decisions made
// under it with every connection it opens.

package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// NewConnector wraps any database/sql connector (pgx's stdlib.GetConnector, lib/pq, a
// test fake) so that every connection it makes is fenced by p.
//
// With the database-side guard (sqlfence guard) installed, the inner connector's
// sessions must carry the setting GuardSetting = on, as the registered driver's do
// (the guard also requires each write to come from a statement sqlfence fenced); with
// pgx, set it in the startup message, where it costs no round trip:
//
//	cfg.RuntimeParams[sqlfence.GuardSetting] = "on"
//	cfg.RuntimeParams["standard_conforming_strings"] = "on"
//	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), policy))
//
// standard_conforming_strings must be on (PostgreSQL's default) on the inner
// connector's sessions: with it off the server reads a backslash inside '…' as an
// escape, and a statement sqlfence parsed as one harmless SELECT can be two to the
// server. sqlfence refuses statements that change it; the registered driver also pins
// it in the startup message, so a role or database default cannot turn it off.
//
// Options set the logger, the decision cache's bounds, an observer of every decision,
// and shadow mode's summary ([WithLogger], [WithCacheLimits], [WithObserver],
// [WithShadowSummary]).
//
// NewConnector panics when p is nil, was not made by [LoadPolicy] or [ParsePolicy], or
// was changed into something ParsePolicy would reject, and when inner is nil or an
// option is invalid: like sql.Register with a nil driver, these are mistakes in the
// program, and a connector that opened unfenced connections would be worse than none.
// The connector fences with a copy of p taken here (see [Policy]).
func NewConnector(inner driver.Connector, p *Policy, opts ...ConnectorOption) driver.Connector {
	c, err := newConnector(inner, p, opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// newConnector is NewConnector with its mistakes as errors, for Driver.OpenConnector.
func newConnector(inner driver.Connector, p *Policy, opts ...ConnectorOption) (*connector, error) {
	if inner == nil {
		return nil, errors.New("sqlfence: NewConnector: nil inner connector")
	}
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
	c := &connector{inner: inner, cfg: cfg, base: fp}
	c.enforcer.Store(newEnforcer(fp, cfg))
	return c, nil
}

type connector struct {
	inner driver.Connector
	cfg   connectorConfig
	base  *engine.Policy // the compiled policy, before resolve: catalog extends it
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
}

var (
	_ driver.Connector = (*connector)(nil)
	_ io.Closer        = (*connector)(nil)
)

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	ic, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	f := c.enforcer.Load()
	if f.policy.ResolveCatalog {
		if f, err = c.resolve(ctx, ic); err != nil {
			ic.Close()
			return nil, err
		}
	}
	cn := &conn{inner: ic, cn: c, enf: f, params: reporterOf(ic)}
	if err := checkPinned(cn.params); err != nil {
		ic.Close()
		if f.observing {
			f.emit(ctx, Event{Outcome: OutcomeRefuse, Err: err}, false) // refused in shadow mode too
		}
		return nil, err
	}
	return cn, nil
}

// resolve extends the policy from the catalog once, before any connection is handed
// out, so that no statement is ever decided under the unresolved policy.
func (c *connector) resolve(ctx context.Context, ic driver.Conn) (*enforcer, error) {
	c.resolveMu.Lock()
	defer c.resolveMu.Unlock()
	if c.resolved {
		return c.enforcer.Load(), nil
	}
	return c.reload(ctx, ic)
}

// refresh reads the catalog again over ic, after DDL through the driver, and swaps
// in an enforcer for the new snapshot.
func (c *connector) refresh(ctx context.Context, ic driver.Conn) error {
	c.resolveMu.Lock()
	defer c.resolveMu.Unlock()
	_, err := c.reload(ctx, ic)
	return err
}

func (c *connector) reload(ctx context.Context, ic driver.Conn) (*enforcer, error) {
	p, err := resolveCatalog(ctx, ic, c.base)
	if err != nil {
		return nil, err
	}
	f := newEnforcer(p, c.cfg)
	if old := c.enforcer.Swap(f); old != nil {
		st := old.eng.Stats()
		c.retired.Hits += st.Hits
		c.retired.Misses += st.Misses
		c.retired.Evictions += st.Evictions
	}
	c.resolved = true
	return f, nil
}

func (c *connector) Driver() driver.Driver { return Driver{} }

// Close forwards to the inner connector: database/sql calls it from DB.Close, and
// pgx's connector releases its resources there.
func (c *connector) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}
