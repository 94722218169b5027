package sqlfencesqlx_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/sqlfence/sqlfence"
	sqlfencesqlx "github.com/sqlfence/sqlfence/contrib/sqlx"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type item struct {
	SKU      string `db:"sku"`
	Quantity int    `db:"quantity"`
}

const (
	schema = `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 5)`
	state  = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`
	seeded = "a:10:5 b:20:5"
)

// open returns a database set up with schema, its DSN, the policy file, and a plain
// pgx handle on it.
func open(t *testing.T) (dsn, policyPath string, raw *sql.DB) {
	t.Helper()
	dsn = pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(schema); err != nil {
		t.Fatal(err)
	}
	policyPath = filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(policyPath, []byte("version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dsn, policyPath, raw
}

// withPolicy adds the policy parameter to a URL DSN.
func withPolicy(dsn, policyPath string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "sqlfence_policy=" + policyPath
}

func current(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var s string
	if err := raw.QueryRow(state).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBindType(t *testing.T) {
	if got := sqlx.BindType("sqlfence"); got != sqlx.DOLLAR {
		t.Fatalf("sqlx.BindType(\"sqlfence\") = %d, want DOLLAR", got)
	}
}

// TestWrites: sqlx's named, rebound and IN queries on the protected table, with a
// stale epoch (3, below the stored 5), a fresh one (7) and none, judged on the data.
func TestWrites(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		write        func(ctx context.Context, db *sqlx.DB) error
		stale, fresh string
		staleErr     error
	}{
		{name: "named exec",
			write: func(ctx context.Context, db *sqlx.DB) error {
				_, err := db.NamedExecContext(ctx, `UPDATE inventory SET quantity = :quantity WHERE sku = :sku`, item{"a", 1})
				return err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:1:7 b:20:5"},
		{name: "named batch insert",
			write: func(ctx context.Context, db *sqlx.DB) error {
				_, err := db.NamedExecContext(ctx, `INSERT INTO inventory (sku, quantity) VALUES (:sku, :quantity)`, []item{{"c", 3}, {"d", 4}})
				return err
			},
			stale: "a:10:5 b:20:5 c:3:3 d:4:3", fresh: "a:10:5 b:20:5 c:3:7 d:4:7"},
		{name: "rebind",
			write: func(ctx context.Context, db *sqlx.DB) error {
				_, err := db.ExecContext(ctx, db.Rebind(`DELETE FROM inventory WHERE sku = ?`), "b")
				return err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:10:5"},
		{name: "in",
			write: func(ctx context.Context, db *sqlx.DB) error {
				q, args, err := sqlx.In(`UPDATE inventory SET quantity = 0 WHERE sku IN (?)`, []string{"a", "b"})
				if err != nil {
					return err
				}
				_, err = db.ExecContext(ctx, db.Rebind(q), args...)
				return err
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:0:7 b:0:7"},
		{name: "named query returning",
			write: func(ctx context.Context, db *sqlx.DB) error {
				rows, err := db.NamedQueryContext(ctx, `UPDATE inventory SET quantity = :quantity WHERE sku = :sku RETURNING sku, quantity`, item{"a", 2})
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var it item
					if err := rows.StructScan(&it); err != nil {
						return err
					}
				}
				return rows.Err()
			},
			stale: seeded, staleErr: sqlfence.ErrFenced, fresh: "a:2:7 b:20:5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, epoch := range []int64{3, 7, 0} {
				dsn, policyPath, raw := open(t)
				db, err := sqlfencesqlx.Open(withPolicy(dsn, policyPath))
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if epoch != 0 {
					ctx = sqlfence.WithEpoch(ctx, epoch)
				}
				err = c.write(ctx, db)
				got := current(t, raw)
				db.Close()
				switch epoch {
				case 3:
					if c.staleErr == nil && err != nil || c.staleErr != nil && !errors.Is(err, c.staleErr) {
						t.Errorf("stale: err = %v, want %v", err, c.staleErr)
					}
					if got != c.stale {
						t.Errorf("stale: table %q, want %q", got, c.stale)
					}
				case 7:
					if err != nil {
						t.Errorf("fresh: %v", err)
					}
					if got != c.fresh {
						t.Errorf("fresh: table %q, want %q", got, c.fresh)
					}
				case 0:
					if !errors.Is(err, sqlfence.ErrUnfenced) {
						t.Errorf("no epoch: err = %v, want ErrUnfenced", err)
					}
					if got != seeded {
						t.Errorf("no epoch: table %q", got)
					}
				}
			}
		})
	}
}

// TestNewDb: a handle from sqlfence.NewConnector, wrapped for sqlx.
func TestNewDb(t *testing.T) {
	t.Parallel()
	dsn, policyPath, raw := open(t)
	policy, err := sqlfence.LoadPolicy(policyPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlfencesqlx.NewDb(sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), policy)))
	defer db.Close()
	if _, err := db.NamedExecContext(sqlfence.WithEpoch(context.Background(), 7), `UPDATE inventory SET quantity = :quantity WHERE sku = :sku`, item{"b", 1}); err != nil {
		t.Fatal(err)
	}
	if got := current(t, raw); got != "a:10:5 b:1:7" {
		t.Fatalf("table %q", got)
	}
}

// TestWithoutBindType: under a driver name sqlx does not know, sqlx sends ? and
// sqlfence's refusal says what to do.
func TestWithoutBindType(t *testing.T) {
	t.Parallel()
	dsn, policyPath, raw := open(t)
	sqlDB, err := sql.Open("sqlfence", withPolicy(dsn, policyPath))
	if err != nil {
		t.Fatal(err)
	}
	db := sqlx.NewDb(sqlDB, "sqlfence-unregistered")
	defer db.Close()
	_, err = db.NamedExecContext(sqlfence.WithEpoch(context.Background(), 7), `UPDATE inventory SET quantity = :quantity WHERE sku = :sku`, item{"a", 1})
	if !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), `sqlx.BindDriver("sqlfence", sqlx.DOLLAR)`) {
		t.Fatalf("err = %v, want a refusal that names sqlx.BindDriver", err)
	}
	if got := current(t, raw); got != seeded {
		t.Fatalf("table %q", got)
	}
}
