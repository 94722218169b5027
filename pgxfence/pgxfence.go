// The front's shared state and the two entry points: New over a pool, NewConn over
// one connection.

package pgxfence

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// fence is what a Pool or a Conn and every Tx begun from it share: sqlfence's Fence
// for the policy, and the connections' default exec mode (read once: pgx's
// Config() copies the whole configuration).
type fence struct {
	f    front.Fence
	mode pgx.QueryExecMode
	// key names this fence's record of each connection's session in the
	// connection's PgConn.CustomData (session.go): unique to the fence, so that two
	// fences over one pool each check a connection against their own history.
	key string
}

// fenceKeys numbers the fences made, for their keys.
var fenceKeys atomic.Uint64

func open(p *sqlfence.Policy, opts []sqlfence.ConnectorOption, cfg *pgx.ConnConfig) (*fence, error) {
	if p == nil {
		return nil, errors.New("pgxfence: nil policy; load one with sqlfence.LoadPolicy or sqlfence.ParsePolicy")
	}
	anyOpts := make([]any, len(opts))
	for i, o := range opts {
		anyOpts[i] = o
	}
	f, err := front.Open(p, anyOpts)
	if err != nil {
		return nil, err
	}
	fe := &fence{f: f, mode: cfg.DefaultQueryExecMode, key: "sqlfence/session/" + strconv.FormatUint(fenceKeys.Add(1), 10)}
	f.SetDial(fe.dialer(cfg))
	return fe, nil
}

// dialer opens a connection of cfg, not of the pool (whose every connection may be
// held, one by the very transaction that asks), to read the catalog on outside the
// application's transaction (front.Fence.SetDial); the catalog is read only from a
// server the connector's history admits.
func (fe *fence) dialer(cfg *pgx.ConnConfig) func(ctx context.Context) (front.Querier, func(), error) {
	return func(ctx context.Context) (front.Querier, func(), error) {
		c := cfg.Copy()
		c.Tracer = nil // the application's traces show its own statements only
		conn, err := pgx.ConnectConfig(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		closeConn := func() { conn.Close(context.Background()) }
		q := target{run: conn}.querier(fe)
		if _, _, err := fe.f.Session(ctx, q, conn); err != nil {
			closeConn()
			return nil, nil, err
		}
		return q, closeConn, nil
	}
}

// Pool is a *pgxpool.Pool whose statements are fenced.
type Pool struct {
	pool *pgxpool.Pool
	fe   *fence
}

// New fences pool with p (a policy from sqlfence.LoadPolicy or sqlfence.ParsePolicy)
// and the same options as sqlfence.NewConnector. The pool's connections must keep
// standard_conforming_strings on and client_encoding UTF8 (PostgreSQL's defaults);
// a statement on a connection that does not is refused. With the database-side
// guard (sqlfence guard) installed, the connections must carry the setting
// sqlfence.GuardSetting = on, set where it costs no round trip (Open sets it):
//
//	cfg.ConnConfig.RuntimeParams[sqlfence.GuardSetting] = "on"
//
// Without it New asks the database once whether the guard is installed, and fails
// with the fix if it is (SF711), rather than at the first write.
func New(pool *pgxpool.Pool, p *sqlfence.Policy, opts ...sqlfence.ConnectorOption) (*Pool, error) {
	if pool == nil {
		return nil, errors.New("pgxfence: New: nil pool")
	}
	if err := checkGuardSetting(pool.Config().ConnConfig.RuntimeParams, poolConn(pool)); err != nil {
		return nil, err
	}
	fe, err := open(p, opts, pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	return &Pool{pool: pool, fe: fe}, nil
}

// Conn is a *pgx.Conn whose statements are fenced. Like a *pgx.Conn it is not safe
// for concurrent use.
type Conn struct {
	conn    *pgx.Conn
	status  func(string) string
	fe      *fence
	pending bool // DDL ran in a transaction that has not ended (front.Fence.Changed)
}

// NewConn fences conn with p and the options, as New does a pool.
func NewConn(conn *pgx.Conn, p *sqlfence.Policy, opts ...sqlfence.ConnectorOption) (*Conn, error) {
	if conn == nil {
		return nil, errors.New("pgxfence: NewConn: nil conn")
	}
	if err := checkGuardSetting(conn.Config().RuntimeParams, connConn(conn)); err != nil {
		return nil, err
	}
	fe, err := open(p, opts, conn.Config())
	if err != nil {
		return nil, err
	}
	return &Conn{conn: conn, status: conn.PgConn().ParameterStatus, fe: fe}, nil
}

// Raw returns the pool behind p. Whatever runs on it bypasses the fence, so it is
// handed out only on the explicit unfenced path: ctx from sqlfence.Unfenced and
// `unfenced: allow` in the policy.
func (p *Pool) Raw(ctx context.Context) (*pgxpool.Pool, error) {
	if err := p.fe.f.Raw(ctx); err != nil {
		return nil, err
	}
	return p.pool, nil
}

// Raw returns the connection behind c, on the explicit unfenced path only (see
// Pool.Raw).
func (c *Conn) Raw(ctx context.Context) (*pgx.Conn, error) {
	if err := c.fe.f.Raw(ctx); err != nil {
		return nil, err
	}
	return c.conn, nil
}

// target is where one statement goes: the connection that reports the session's
// settings and that rewriters see, and what sends (the conn, or a transaction on it).
type target struct {
	conn    *pgx.Conn
	status  func(string) string // conn's ParameterStatus (kept by Conn and Tx: the method value allocates)
	run     runner
	pending *bool // nil for a pool's statement outside a transaction
}

// runner is what *pgx.Conn and pgx.Tx have in common for sending.
type runner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// acquire takes a connection of the pool for one statement, as pgxpool's own methods
// do. A connection whose session reads text differently is closed, so that the pool
// does not hand it out again.
func (p *Pool) acquire(ctx context.Context) (*pgxpool.Conn, target, error) {
	pc, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, target{}, err
	}
	c := pc.Conn()
	return pc, target{conn: c, status: c.PgConn().ParameterStatus, run: c}, nil
}

// release returns pc to the pool; a connection refused for its session (its
// settings, its server's place in the cluster's history) is closed first so that the
// pool destroys it.
func release(ctx context.Context, pc *pgxpool.Conn, err error) {
	if err != nil {
		if fe := (*sqlfence.Error)(nil); errors.As(err, &fe) && sessionRefusal(fe.Code) {
			pc.Conn().Close(context.WithoutCancel(ctx))
		}
	}
	pc.Release()
}

// sessionRefusal reports the codes that refuse a connection rather than a statement.
func sessionRefusal(code string) bool {
	switch code {
	case rulecode.SessionSettings, rulecode.BehindHistory, rulecode.OtherCluster, rulecode.SessionCommit:
		return true
	}
	return false
}

func (c *Conn) target() target {
	return target{conn: c.conn, status: c.status, run: c.conn, pending: &c.pending}
}
