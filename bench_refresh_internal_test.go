package sqlfence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// BenchmarkCatalogRefresh is the cost of one catalog_refresh period, on a connector
// that has read the catalog (one protected table, the benchmarks' schema), with the
// application's idle connection at hand:
//
//   - unchanged: the fingerprint, read on that connection, has not moved: nothing
//     else is read, nothing is swapped.
//
//   - same-rows: another session created a table without an epoch column: the
//     fingerprint moved, the catalog is read again on a new connection, and the rows
//     are those the enforcer in use was made from, which stays.
//
//   - changed: another session replaced a function's body: read again, and a new
//     enforcer (an empty decision cache) swapped in.
//
//     go test -run '^$' -bench CatalogRefresh -count 3 .
func BenchmarkCatalogRefresh(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dsn := pgtest.NewDB(b)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `CREATE TABLE bench_items (id int PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 0'`); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\ncatalog_refresh: 1s\ntables: [bench_items]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	cn, err := Driver{}.OpenConnector(dsn + sep + "sqlfence_policy=" + path)
	if err != nil {
		b.Fatal(err)
	}
	c := cn.(*connector)
	db := sql.OpenDB(cn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		b.Fatal(err)
	}
	app, err := raw.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	n := 0
	for _, kind := range []struct {
		name string
		ddl  func() string // before each period, untimed; nil for none
		swap bool
	}{
		{"unchanged", nil, false},
		{"same-rows", func() string { n++; return fmt.Sprintf("CREATE TABLE other_%d (x int)", n) }, false},
		{"changed", func() string {
			n++
			return fmt.Sprintf("CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT %d'", n)
		}, true},
	} {
		b.Run(kind.name, func(b *testing.B) {
			err := app.Raw(func(dc any) error {
				q := queryerQuerier(dc.(driver.QueryerContext))
				reads, kept := c.reads.Load(), c.kept.Load()
				before := c.current()
				b.ResetTimer()
				for range b.N {
					if kind.ddl != nil {
						b.StopTimer()
						if _, err := raw.ExecContext(ctx, kind.ddl()); err != nil {
							return err
						}
						b.StartTimer()
					}
					if err := refreshOnce(ctx, c.fence, q); err != nil {
						return err
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(c.reads.Load()-reads)/float64(b.N), "full-reads/op")
				b.ReportMetric(float64(c.kept.Load()-kept)/float64(b.N), "kept/op")
				if swapped := c.current() != before; swapped != kind.swap {
					return fmt.Errorf("enforcer swapped: %v, want %v", swapped, kind.swap)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// refreshOnce runs one catalog_refresh period, as Ready does when it is due, on an
// idle connection.
func refreshOnce(ctx context.Context, f *fence, q front.Querier) error {
	f.resolveMu.Lock()
	defer f.resolveMu.Unlock()
	return f.catchUp(ctx, q, true)
}
