// Package nopdriver is a database/sql driver that does nothing, as cheaply as possible.
// Wrapped by sqlfence in benchmarks, it leaves only the wrapper's own cost to measure:
// every method returns shared values, so the inner driver itself allocates nothing.
package nopdriver

import (
	"context"
	"database/sql/driver"
	"io"
)

// Connector makes Conns. Its zero value is ready to use.
type Connector struct{}

// Conn is a connection that accepts every statement and sends nothing anywhere.
// Exec reports one row affected, so a fenced write never takes sqlfence's 0-row path.
type Conn struct{}

var (
	_ driver.Connector          = Connector{}
	_ driver.Conn               = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.Stmt               = stmt{}
	_ driver.StmtExecContext    = stmt{}
	_ driver.StmtQueryContext   = stmt{}
)

// conn is the one Conn: it has no state, so every Connect can hand out the same one
// without allocating.
var conn = &Conn{}

func (Connector) Connect(context.Context) (driver.Conn, error) { return conn, nil }
func (Connector) Driver() driver.Driver                        { return Driver{} }

// Driver opens Conns; database/sql needs one for Connector.Driver.
type Driver struct{}

func (Driver) Open(string) (driver.Conn, error) { return conn, nil }

func (*Conn) Prepare(string) (driver.Stmt, error) { return stmt{}, nil }
func (*Conn) PrepareContext(context.Context, string) (driver.Stmt, error) {
	return stmt{}, nil
}
func (*Conn) Close() error                                                 { return nil }
func (*Conn) Begin() (driver.Tx, error)                                    { return tx{}, nil }
func (*Conn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) { return tx{}, nil }

func (*Conn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return result{}, nil
}

func (*Conn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return rows{}, nil
}

type stmt struct{}

func (stmt) Close() error                               { return nil }
func (stmt) NumInput() int                              { return -1 }
func (stmt) Exec([]driver.Value) (driver.Result, error) { return result{}, nil }
func (stmt) Query([]driver.Value) (driver.Rows, error)  { return rows{}, nil }
func (stmt) ExecContext(context.Context, []driver.NamedValue) (driver.Result, error) {
	return result{}, nil
}
func (stmt) QueryContext(context.Context, []driver.NamedValue) (driver.Rows, error) {
	return rows{}, nil
}

type tx struct{}

func (tx) Commit() error   { return nil }
func (tx) Rollback() error { return nil }

// result reports one row changed, the normal outcome of a fenced write.
type result struct{}

func (result) LastInsertId() (int64, error) { return 0, nil }
func (result) RowsAffected() (int64, error) { return 1, nil }

// rows is an empty result set.
type rows struct{}

func (rows) Columns() []string         { return nil }
func (rows) Close() error              { return nil }
func (rows) Next([]driver.Value) error { return io.EOF }
