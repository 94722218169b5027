// Package bun is a stub of github.com/uptrace/bun for the analyzer's tests.
package bun

import (
	"context"
	"database/sql"
)

type DB struct{ *sql.DB }

type RawQuery struct{}

func (db *DB) NewRaw(query string, args ...any) *RawQuery { return nil }
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return nil, nil
}
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return nil, nil
}

func (db *DB) Exec(query string, args ...any) (sql.Result, error) { return nil, nil }

func (q *RawQuery) Scan(ctx context.Context, dest ...any) error               { return nil }
func (q *RawQuery) Exec(ctx context.Context, dest ...any) (sql.Result, error) { return nil, nil }
