package guard

import (
	"database/sql"
	"sync/atomic"
	"testing"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// BenchmarkCarried is what fencing a trigger's write costs: a single-row UPDATE by
// primary key of an unprotected table whose AFTER trigger updates one row of another
// table, under a fresh epoch through the driver (resolve: catalog, the guard and its
// catalog version installed) — in one case the trigger's table is protected, so the
// statement goes out with its epoch carried and unprepared, and the guard's row
// trigger compares and stamps the row; in the other it is not, and the statement
// passes as it is. Same database, same run, alternating; carried/plain is the ratio
// of the medians (go test -run '^$' -bench Carried -count 5 ./internal/cli/guard).
func BenchmarkCarried(b *testing.B) {
	dsn := pgtest.NewDB(b)
	raw := clitest.PGConnect(b, dsn, nil)
	if _, err := raw.Exec(b.Context(), `
		CREATE TABLE stock (id int PRIMARY KEY, n int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE plain_stock (LIKE stock INCLUDING ALL);
		CREATE TABLE orders_carried (id int PRIMARY KEY, n int NOT NULL);
		CREATE TABLE orders_plain (LIKE orders_carried INCLUDING ALL);
		INSERT INTO stock SELECT i, 0, 0 FROM generate_series(1, 1000) i;
		INSERT INTO plain_stock SELECT * FROM stock;
		INSERT INTO orders_carried SELECT i, 0 FROM generate_series(1, 1000) i;
		INSERT INTO orders_plain SELECT * FROM orders_carried;
		CREATE FUNCTION bump_stock() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE stock SET n = n + 1 WHERE id = NEW.id; RETURN NULL; END$$;
		CREATE FUNCTION bump_plain() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE plain_stock SET n = n + 1 WHERE id = NEW.id; RETURN NULL; END$$;
		CREATE TRIGGER bump AFTER UPDATE ON orders_carried FOR EACH ROW EXECUTE FUNCTION bump_stock();
		CREATE TRIGGER bump AFTER UPDATE ON orders_plain FOR EACH ROW EXECUTE FUNCTION bump_plain();`); err != nil {
		b.Fatal(err)
	}
	policy := clitest.WriteFile(b, b.TempDir(), "sqlfence.yaml", "version: 1\ntables: [stock]\n")
	if out, errOut, code := clitest.Run(b, Run, "--policy", policy, "--apply", "--dsn", dsn); code != cmdutil.ExitOK {
		b.Fatalf("guard: %s%s", out, errOut)
	}
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var epoch atomic.Int64
	m := alternate(b, db, &epoch, 1, "orders_plain", "orders_carried")
	b.ReportMetric(m[0], "plain-ns/write")
	b.ReportMetric(m[1], "carried-ns/write")
	b.ReportMetric(m[1]/m[0], "carried/plain")
	var stamped int
	if err := raw.QueryRow(b.Context(), `SELECT count(*) FROM stock WHERE writer_epoch > 0`).Scan(&stamped); err != nil || stamped == 0 {
		b.Fatalf("no row of stock stamped by the carried epoch (%d, %v)", stamped, err)
	}
}
