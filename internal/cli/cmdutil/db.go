package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/dsnparam"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// DefaultConnectTimeout bounds how long a subcommand waits for a server that does
// not answer.
const DefaultConnectTimeout = 5 * time.Second

// Connect opens one pgx connection with a bounded connect time, so that a server that
// does not answer is a clear error rather than a hang.
func Connect(ctx context.Context, dsn string, timeout time.Duration) (*pgx.Conn, error) {
	if dsn == "" {
		return nil, errors.New("no database: give --dsn postgres://user@host:5432/dbname")
	}
	// The application's DSN may name its policy (sqlfence_policy): taken out, as the
	// driver does, so that the server is not sent a setting it does not know.
	_, dsn, err := dsnparam.Split(dsn)
	if err != nil {
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "sqlfence: "), "bad DSN: ")
		return nil, errors.New("bad --dsn: " + msg)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bad --dsn: %w", err)
	}
	// The commands' own text (the guard's functions, catalog queries) is UTF-8, and so
	// is what they read back: a role's or database's default client_encoding must not
	// reach their session.
	cfg.RuntimeParams["client_encoding"] = "UTF8"
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > timeout {
		cfg.ConnectTimeout = timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s within %v: %w", DescribeTarget(cfg), timeout, err)
	}
	return conn, nil
}

// QueryFunc adapts conn to sqlfence.Policy.CheckCatalog and internal/pgcatalog: it
// runs one query and returns every row's values.
func QueryFunc(conn *pgx.Conn) func(ctx context.Context, sql string, args ...any) ([][]any, error) {
	return pgcatalog.PgxQuery(conn)
}

// DescribeTarget names the server a config points at, without its password.
func DescribeTarget(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("database %q as %q on the socket in %s", cfg.Database, cfg.User, host)
	}
	return fmt.Sprintf("database %q as %q at %s:%d", cfg.Database, cfg.User, host, cfg.Port)
}

// WithParam adds key=value to a DSN in URL or keyword/value form.
func WithParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	v := strings.ReplaceAll(strings.ReplaceAll(value, `\`, `\\`), `'`, `\'`)
	return strings.TrimSpace(dsn) + " " + key + "='" + v + "'"
}

// PGDuration spells a duration the way PostgreSQL settings read it (lock_timeout).
func PGDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}
