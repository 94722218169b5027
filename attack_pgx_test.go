package sqlfence_test

// The attack corpus through pgxfence: the harness of attack_test.go drives a
// database/sql handle, so a thin database/sql connector hands each statement, with
// its arguments unchanged (pgx's options and rewriters among them), to a
// *pgxfence.Conn. The bridge decides nothing: every decision is pgxfence's.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// TestAttacksPgx runs every case of testdata/attacks through pgxfence.Conn.
func TestAttacksPgx(t *testing.T) { runAttacks(t, "pgx", false) }

func atkOpenPgx(c *atkCase, dsn string) (*sql.DB, func(), error) {
	p, err := sqlfence.ParsePolicy([]byte(atkPolicies[c.policy]), c.policy+".yaml")
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(pgxBridge{dsn: dsn, p: p, c: c})
	db.SetMaxIdleConns(0)
	return db, func() { db.Close() }, nil
}

type pgxBridge struct {
	dsn string
	p   *sqlfence.Policy
	c   *atkCase // its exec mode and AfterConnect statements
}

func (b pgxBridge) Connect(ctx context.Context) (driver.Conn, error) {
	cfg, err := pgx.ParseConfig(b.dsn)
	if err != nil {
		return nil, err
	}
	if err := atkConfig(b.c, cfg); err != nil {
		return nil, err
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for _, q := range b.c.afterConnect {
		if _, err := c.Exec(ctx, q); err != nil {
			c.Close(ctx)
			return nil, err
		}
	}
	fc, err := pgxfence.NewConn(c, b.p)
	if err != nil {
		c.Close(ctx)
		return nil, err
	}
	return &bridgeConn{fc: fc, c: c}, nil
}

func (b pgxBridge) Driver() driver.Driver { return bridgeDriver{} }

type bridgeDriver struct{}

func (bridgeDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("the pgx bridge opens through its connector")
}

type bridgeConn struct {
	fc *pgxfence.Conn
	c  *pgx.Conn
}

var (
	_ driver.ExecerContext     = (*bridgeConn)(nil)
	_ driver.QueryerContext    = (*bridgeConn)(nil)
	_ driver.NamedValueChecker = (*bridgeConn)(nil)
	_ driver.Pinger            = (*bridgeConn)(nil)
	_ driver.Validator         = (*bridgeConn)(nil)
)

// CheckNamedValue passes every argument as it is, for pgxfence to read.
func (c *bridgeConn) CheckNamedValue(*driver.NamedValue) error { return nil }

func (c *bridgeConn) Prepare(query string) (driver.Stmt, error) {
	return bridgeStmt{c: c, query: query}, nil
}

func (c *bridgeConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.fc.Close(ctx)
}

func (c *bridgeConn) Begin() (driver.Tx, error) {
	return nil, errors.New("the pgx bridge has no transactions of its own")
}

func (c *bridgeConn) Ping(ctx context.Context) error { return c.fc.Ping(ctx) }
func (c *bridgeConn) IsValid() bool                  { return !c.c.IsClosed() }

func values(args []driver.NamedValue) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

func (c *bridgeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	tag, err := c.fc.Exec(ctx, query, values(args)...)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

func (c *bridgeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.fc.Query(ctx, query, values(args)...)
	if err != nil {
		return nil, err
	}
	return &bridgeRows{rows: rows}, nil
}

// bridgeStmt runs its text through the fenced conn at each execution, as pgx's
// statement cache does.
type bridgeStmt struct {
	c     *bridgeConn
	query string
}

func (s bridgeStmt) Close() error  { return nil }
func (s bridgeStmt) NumInput() int { return -1 }

func (s bridgeStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s bridgeStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s bridgeStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s bridgeStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

type bridgeRows struct{ rows pgx.Rows }

func (r *bridgeRows) Columns() []string {
	fds := r.rows.FieldDescriptions()
	out := make([]string, len(fds))
	for i, fd := range fds {
		out[i] = fd.Name
	}
	return out
}

func (r *bridgeRows) Close() error {
	r.rows.Close()
	return r.rows.Err()
}

func (r *bridgeRows) Next(dest []driver.Value) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	vs, err := r.rows.Values()
	if err != nil {
		return err
	}
	for i := range dest {
		if i >= len(vs) {
			break
		}
		switch v := vs[i].(type) {
		case nil, int64, float64, bool, string, []byte, time.Time:
			dest[i] = v
		default:
			dest[i] = fmt.Sprint(v)
		}
	}
	return nil
}
