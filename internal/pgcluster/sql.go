package pgcluster

// Short-lived superuser connections for the harnesses' own queries. Each query
// opens its own connection: the servers under test crash, freeze and change roles,
// and a pooled connection would outlive the server it was made for.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// queryRow runs one query on dsn and scans its single row into dest.
func queryRow(ctx context.Context, dsn, sql string, args []any, dest ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}

// execSQL runs statements on dsn, one after another, on one connection.
func execSQL(ctx context.Context, dsn string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("pgcluster: %s: %w", s, err)
		}
	}
	return nil
}

// readPosition reads a server's place in its cluster's history.
func readPosition(ctx context.Context, dsn string) (pgcatalog.Position, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return pgcatalog.Position{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return pgcatalog.ReadPosition(ctx, pgcatalog.PgxQuery(conn))
}

func containsAny(b []byte, subs ...string) bool {
	for _, s := range subs {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}
