// Package sqlx is a stub of github.com/jmoiron/sqlx for the analyzer's tests.
package sqlx

import (
	"context"
	"database/sql"
)

const DOLLAR = 2

type DB struct{ *sql.DB }

type Tx struct{ *sql.Tx }

type Rows struct{ *sql.Rows }

type Row struct{ *sql.Row }

func Open(driverName, dsn string) (*DB, error) { return &DB{}, nil }

func (db *DB) Rebind(query string) string                                         { return query }
func (db *DB) Get(dest any, query string, args ...any) error                      { return nil }
func (db *DB) Select(dest any, query string, args ...any) error                   { return nil }
func (db *DB) MustExec(query string, args ...any) sql.Result                      { return nil }
func (db *DB) Queryx(query string, args ...any) (*Rows, error)                    { return nil, nil }
func (db *DB) QueryRowx(query string, args ...any) *Row                           { return nil }
func (db *DB) Beginx() (*Tx, error)                                               { return nil, nil }
func (db *DB) GetContext(ctx context.Context, dest any, q string, a ...any) error { return nil }
func (tx *Tx) MustExec(query string, args ...any) sql.Result                      { return nil }
func (tx *Tx) Get(dest any, query string, args ...any) error                      { return nil }

func Rebind(bindType int, query string) string { return query }

type Queryer interface {
	Query(query string, args ...any) (*sql.Rows, error)
}

func Get(q Queryer, dest any, query string, args ...any) error    { return nil }
func Select(q Queryer, dest any, query string, args ...any) error { return nil }

const QUESTION = 1

type Conn struct{ *sql.Conn }

type NamedStmt struct{}

func (n *NamedStmt) Exec(arg any) (sql.Result, error) { return nil, nil }

type Ext interface {
	Queryer
	Exec(query string, args ...any) (sql.Result, error)
}

func (db *DB) NamedExec(query string, arg any) (sql.Result, error) { return nil, nil }
func (db *DB) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	return nil, nil
}
func (db *DB) NamedQuery(query string, arg any) (*Rows, error) { return nil, nil }
func (db *DB) NamedQueryContext(ctx context.Context, query string, arg any) (*Rows, error) {
	return nil, nil
}
func (db *DB) PrepareNamed(query string) (*NamedStmt, error) { return nil, nil }
func (db *DB) PrepareNamedContext(ctx context.Context, query string) (*NamedStmt, error) {
	return nil, nil
}
func (db *DB) BindNamed(query string, arg any) (string, []any, error) { return query, nil, nil }
func (tx *Tx) NamedExec(query string, arg any) (sql.Result, error)    { return nil, nil }
func (tx *Tx) PrepareNamed(query string) (*NamedStmt, error)          { return nil, nil }
func (c *Conn) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	return nil, nil
}

func Named(query string, arg any) (string, []any, error)                   { return query, nil, nil }
func BindNamed(bindType int, query string, arg any) (string, []any, error) { return query, nil, nil }
func In(query string, args ...any) (string, []any, error)                  { return query, nil, nil }
func NamedExec(e Ext, query string, arg any) (sql.Result, error)           { return nil, nil }
func NamedQueryContext(ctx context.Context, e Ext, query string, arg any) (*Rows, error) {
	return nil, nil
}
