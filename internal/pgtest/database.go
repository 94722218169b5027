package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// CreateDatabase creates an empty database with a unique name on the server
// behind adminDSN and returns a DSN for it that differs from adminDSN only in
// the database name. drop removes the database, disconnecting any clients the
// caller forgot to close.
func CreateDatabase(ctx context.Context, adminDSN string) (dsn string, drop func(context.Context) error, err error) {
	var b [8]byte
	rand.Read(b[:])
	name := "sqlfence_test_" + hex.EncodeToString(b[:])
	if dsn, err = withDatabase(adminDSN, name); err != nil {
		return "", nil, err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := execAdmin(ctx, adminDSN, "CREATE DATABASE "+ident+" TEMPLATE template0"); err != nil {
		return "", nil, err
	}
	drop = func(ctx context.Context) error {
		return execAdmin(ctx, adminDSN, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	}
	return dsn, drop, nil
}

func execAdmin(ctx context.Context, adminDSN, sql string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// withDatabase rewrites dsn, in either URL or keyword/value form, to name
// database db while leaving every other setting as it was.
func withDatabase(dsn, db string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		// In keyword/value form the last occurrence of a keyword wins.
		return dsn + " dbname='" + db + "'", nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("pgtest: parse DSN: %w", err)
	}
	u.Path, u.RawPath = "/"+db, ""
	// A dbname query parameter would override the path; re-encode the query
	// only then, to keep the rest of it byte for byte.
	if q := u.Query(); q.Has("dbname") || q.Has("database") {
		q.Del("dbname")
		q.Del("database")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}
