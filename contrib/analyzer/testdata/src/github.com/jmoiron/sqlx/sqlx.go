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
