// Open: one DSN for both fronts. The DSN that sql.Open("sqlfence", dsn) takes opens a
// fenced pgx pool too, with the startup parameters the registered driver sends (the
// guard's session setting among them), so a service that uses both fronts, or moves
// from one to the other, changes nothing but the call.

package pgxfence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/dsnparam"
	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Open opens a fenced pool for dsn, the DSN the registered driver takes: its
// sqlfence_policy parameter names the policy (else SQLFENCE_POLICY does) and is
// removed before pgx reads the rest; an unknown sqlfence_* parameter is an error.
// Every connection carries sqlfence.GuardSetting = on, standard_conforming_strings
// = on and client_encoding UTF8 in its startup message, as the registered driver's
// do, so it works with the guard installed and costs no round trip.
//
//	pool, err := pgxfence.Open(ctx, "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
//
// For pool settings the DSN cannot express (a tracer, AfterConnect), use ParseConfig,
// change the config, and pass pgxpool.NewWithConfig's pool to New.
func Open(ctx context.Context, dsn string, opts ...sqlfence.ConnectorOption) (*Pool, error) {
	cfg, p, err := ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgxfence: %w", err)
	}
	fp, err := New(pool, p, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return fp, nil
}

// ParseConfig reads dsn as Open does and returns the pool's config, with the
// startup parameters set, and the policy.
func ParseConfig(dsn string) (*pgxpool.Config, *sqlfence.Policy, error) {
	path, rest, err := dsnparam.Split(dsn)
	if err != nil {
		return nil, nil, err
	}
	if path == "" {
		path = os.Getenv(sqlfence.PolicyEnv)
	}
	if path == "" {
		return nil, nil, errors.New("pgxfence: no policy: add " + sqlfence.PolicyParam + "=PATH to the DSN or set " + sqlfence.PolicyEnv +
			"=PATH, or load one with sqlfence.LoadPolicy and use New")
	}
	p, err := sqlfence.LoadPolicy(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := pgxpool.ParseConfig(rest)
	if err != nil {
		return nil, nil, fmt.Errorf("pgxfence: bad DSN (%w); write postgres://user@host/db?%s=PATH", err, sqlfence.PolicyParam)
	}
	params := cfg.ConnConfig.RuntimeParams
	params[sqlfence.GuardSetting] = "on"
	params[engine.StandardStrings] = "on"
	params["client_encoding"] = "UTF8"
	return cfg, p, nil
}

// guardCheckTimeout bounds New's one query.
const guardCheckTimeout = 5 * time.Second

// guardCheckSQL is true unless the guard is installed and a session without the
// startup parameter would not carry its setting (no role or database default).
const guardCheckSQL = "SELECT pg_catalog.to_regprocedure('sqlfence.guard()') IS NULL OR " +
	"coalesce(pg_catalog.current_setting('" + sqlfence.GuardSetting + "', true), '') = 'on'"

// checkGuardSetting makes New and NewConn fail at once, with the fix, where the guard
// is installed and the connections would not carry its session setting: every fenced
// write would be rejected by the guard (SF001) only at the first write. It costs one
// query, made only when the config lacks the setting; a database that does not
// answer is left to the first statement.
func checkGuardSetting(params map[string]string, conn func(context.Context) (*pgconn.PgConn, func(), error)) error {
	if params[sqlfence.GuardSetting] == "on" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), guardCheckTimeout)
	defer cancel()
	pc, done, err := conn(ctx)
	if err != nil {
		return nil
	}
	// On the connection itself, past pgx's tracer and statement cache: the
	// application's traces show its own statements only.
	res := pc.ExecParams(ctx, guardCheckSQL, nil, nil, nil, nil).Read()
	done()
	if res.Err != nil || len(res.Rows) != 1 || len(res.Rows[0]) != 1 || string(res.Rows[0][0]) != "f" {
		return nil
	}
	return &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.GuardSettingMissing,
		Reason: "the database has the sqlfence guard installed, and the connections do not carry " + sqlfence.GuardSetting +
			" = on: the guard would reject every fenced write (SF001)",
		Fix: `open the pool with pgxfence.Open(ctx, dsn), which sets it, or set cfg.ConnConfig.RuntimeParams[sqlfence.GuardSetting] = "on" ` +
			"before pgxpool.NewWithConfig (behind PgBouncer: ALTER ROLE … SET sqlfence.fenced = on)"}
}

// poolConn and connConn hand checkGuardSetting a connection of a pool or the conn.
func poolConn(pool *pgxpool.Pool) func(context.Context) (*pgconn.PgConn, func(), error) {
	return func(ctx context.Context) (*pgconn.PgConn, func(), error) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		return c.Conn().PgConn(), c.Release, nil
	}
}

func connConn(conn *pgx.Conn) func(context.Context) (*pgconn.PgConn, func(), error) {
	return func(context.Context) (*pgconn.PgConn, func(), error) { return conn.PgConn(), func() {}, nil }
}
