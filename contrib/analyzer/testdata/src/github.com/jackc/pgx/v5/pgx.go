// Package pgx is a stub of github.com/jackc/pgx/v5 for the analyzer's tests: the
// method sets the analyzer matches, nothing more.
package pgx

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"
)

type Rows interface {
	Next() bool
	Close()
}

type Row interface{ Scan(dest ...any) error }

type Identifier []string

type CopyFromSource interface{ Next() bool }

func CopyFromRows(rows [][]any) CopyFromSource { return nil }

type StatementDescription struct{}

type Conn struct{}

func Connect(ctx context.Context, dsn string) (*Conn, error) { return &Conn{}, nil }

func (c *Conn) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, nil
}
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (Rows, error) { return nil, nil }
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) Row        { return nil }
func (c *Conn) Prepare(ctx context.Context, name, sql string) (*StatementDescription, error) {
	return nil, nil
}
func (c *Conn) CopyFrom(ctx context.Context, tableName Identifier, columnNames []string, rowSrc CopyFromSource) (int64, error) {
	return 0, nil
}
func (c *Conn) Begin(ctx context.Context) (Tx, error)                { return nil, nil }
func (c *Conn) SendBatch(ctx context.Context, b *Batch) BatchResults { return nil }

type Tx interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	CopyFrom(ctx context.Context, tableName Identifier, columnNames []string, rowSrc CopyFromSource) (int64, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

type QueuedQuery struct{}

type Batch struct{}

func (b *Batch) Queue(query string, arguments ...any) *QueuedQuery { return nil }

type BatchResults interface{ Close() error }
