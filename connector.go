// The connector: what sql.OpenDB holds, one per policy, sharing the decisions made
// under it with every connection it opens.

package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"github.com/sqlfence/sqlfence/internal/front"
	"io"

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
	f, err := newFence(p, opts)
	if err != nil {
		return nil, err
	}
	c := &connector{inner: inner, fence: f}
	f.dial, f.dialIdle = c.dialCatalog, true
	return c, nil
}

// connector is the database/sql front's connector: the inner driver's, each of its
// connections fenced by the connector's fence.
type connector struct {
	inner driver.Connector
	*fence
}

var (
	_ driver.Connector = (*connector)(nil)
	_ io.Closer        = (*connector)(nil)
)

// Connect opens a connection of the inner connector and, before any statement is
// decided on it, on pgx checks where its server stands (a server behind the history
// this connector has seen, of another cluster, or a session that commits early is
// refused and closed: history.go), readies the fence over it the first time (the
// claim tables' schemas on pgx, the catalog under resolve: catalog), then refuses a
// session whose settings read text differently. Other drivers' sessions are asked
// nothing the policy does not need: a test fake or go-sqlmock sees only the
// application's statements.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	ic, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	params := statusOf(ic)
	var (
		chk *sessionCheck
		def *engine.Defaults
	)
	if params != nil {
		// Where the server stands, before anything is read on it (history.go): one
		// query per connection, on pgx only.
		q, ok := ic.(driver.QueryerContext)
		if !ok {
			ic.Close()
			return nil, errors.New("sqlfence: a pgx connection that does not implement QueryerContext")
		}
		if chk, def, err = c.session(ctx, queryerQuerier(q), pgxConnOf(ic)); err != nil {
			ic.Close()
			return nil, err
		}
	}
	if params != nil || c.base.ResolveCatalog {
		q, ok := ic.(driver.QueryerContext)
		if !ok {
			ic.Close()
			return nil, errors.New("sqlfence: resolve: catalog needs a driver that implements QueryerContext")
		}
		// A new connection is outside any transaction: idle.
		if err := c.Ready(ctx, queryerQuerier(q), true); err != nil {
			ic.Close()
			return nil, err
		}
	}
	cn := &conn{inner: ic, cn: c, enf: c.current(), params: params, session: chk, defaults: def, querier: connQuerier(ic), pgxConn: pgxConnOf(ic)}
	cn.isPgx, cn.pgxMode = defaultMode(ic)
	if cn.params != nil {
		cn.server = engine.ServerVersionNum(cn.params("server_version"))
	}
	if err := c.Usable(ctx, cn.params, ""); err != nil {
		ic.Close()
		return nil, err
	}
	return cn, nil
}

// dialCatalog opens a connection of the inner connector to read the catalog again
// on (fence.catchUp), and the function that closes it.
func (c *connector) dialCatalog(ctx context.Context) (front.Querier, func(), error) {
	ic, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	q, ok := ic.(driver.QueryerContext)
	if !ok {
		ic.Close()
		return nil, nil, errors.New("sqlfence: resolve: catalog needs a driver that implements QueryerContext")
	}
	if statusOf(ic) != nil {
		// The catalog is read only from a server the history admits.
		if _, _, err := c.session(ctx, queryerQuerier(q), pgxConnOf(ic)); err != nil {
			ic.Close()
			return nil, nil, err
		}
	}
	return queryerQuerier(q), func() { ic.Close() }, nil
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
