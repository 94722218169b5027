package guard

import (
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// BenchmarkGuard is the guard's cost on the driver's normal path: a fenced single-row
// UPDATE by primary key, under a fresh epoch, to a table with the guard and to an
// identical one without it, in the same database and the same run, by 1 and by 8
// workers; guarded/unguarded is the ratio of the medians
// (go test -run '^$' -bench 'Guard$' -count 5 ./internal/cli/guard).
func BenchmarkGuard(b *testing.B) {
	dsn := pgtest.NewDB(b)
	raw := clitest.PGConnect(b, dsn, nil)
	if _, err := raw.Exec(b.Context(), `
		CREATE TABLE guarded (id int PRIMARY KEY, n int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE unguarded (LIKE guarded INCLUDING ALL);
		INSERT INTO guarded SELECT i, 0, 0 FROM generate_series(1, 1000) i;
		INSERT INTO unguarded SELECT * FROM guarded;`); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	guardPolicy := clitest.WriteFile(b, dir, "guard.yaml", "version: 1\ntables: [guarded]\n")
	if out, errOut, code := clitest.Run(b, Run, "--policy", guardPolicy, "--apply", "--dsn", dsn); code != cmdutil.ExitOK {
		b.Fatalf("guard: %s%s", out, errOut)
	}
	// resolve: none: the guard's cost alone (under resolve: catalog a protected table
	// without the guard is one whose writes are refused; BenchmarkCatalogVersion
	// measures what the catalog version adds).
	policy := clitest.WriteFile(b, dir, "sqlfence.yaml", "version: 1\ntables: [guarded, unguarded]\nresolve: none\n")
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var epoch atomic.Int64
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			m := alternate(b, db, &epoch, workers, "unguarded", "guarded")
			b.ReportMetric(m[0], "unguarded-ns/write")
			b.ReportMetric(m[1], "guarded-ns/write")
			b.ReportMetric(m[1]/m[0], "guarded/unguarded")
		})
	}
}

// alternate runs, per iteration, one fenced single-row UPDATE of each table, taking
// turns at going first, each timed on its own, by workers goroutines (each on rows of
// its own, so that no write waits for another's row lock), and returns the medians
// per table: on a shared machine, load that comes and goes then weighs on all alike,
// and a stall does not count. epoch is shared by the runs of one benchmark, so that
// every row's epoch only rises.
func alternate(b *testing.B, db *sql.DB, epoch *atomic.Int64, workers int, tables ...string) []float64 {
	db.SetMaxIdleConns(workers)
	db.SetMaxOpenConns(workers)
	ctx := b.Context()
	spent := make([][][]time.Duration, workers)
	rows := int64(1000 / workers)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range workers {
		spent[w] = make([][]time.Duration, len(tables))
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) && failed.Load() == nil {
				e := epoch.Add(1)
				id := int64(w)*rows + e%rows + 1
				for k := range tables {
					i := (k + int(e)) % len(tables)
					start := time.Now()
					if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, e), "UPDATE "+tables[i]+" SET n = n + 1 WHERE id = $1", id); err != nil {
						failed.Store(&err)
						return
					}
					spent[w][i] = append(spent[w][i], time.Since(start))
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	medians := make([]float64, len(tables))
	for i := range tables {
		var all []time.Duration
		for w := range workers {
			all = append(all, spent[w][i]...)
		}
		slices.Sort(all)
		medians[i] = float64(all[len(all)/2].Nanoseconds())
	}
	return medians
}

// BenchmarkCatalogVersion is what keeping the catalog fresh costs a fenced
// single-row UPDATE by primary key (resolve: catalog, the default, with the guard and
// the catalog version installed): the same write to two guarded tables, one whose
// statement trigger compares the marker's catalog version with the current one (the
// guard as installed) and one whose trigger is the guard without that comparison,
// in the same database and run; checked/unchecked is the ratio
// (go test -run X -bench CatalogVersion -count 5 ./internal/cli/guard). The driver's
// side — two atomic loads before each statement, the marker's "@N" — is in both.
func BenchmarkCatalogVersion(b *testing.B) {
	dsn := pgtest.NewDB(b)
	raw := clitest.PGConnect(b, dsn, nil)
	if _, err := raw.Exec(b.Context(), `
		CREATE TABLE checked (id int PRIMARY KEY, n int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE unchecked (LIKE checked INCLUDING ALL);
		INSERT INTO checked SELECT i, 0, 0 FROM generate_series(1, 1000) i;
		INSERT INTO unchecked SELECT * FROM checked;`); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	policy := clitest.WriteFile(b, dir, "sqlfence.yaml", "version: 1\ntables: [checked, unchecked]\n")
	if out, errOut, code := clitest.Run(b, Run, "--policy", policy, "--apply", "--dsn", dsn); code != cmdutil.ExitOK {
		b.Fatalf("guard: %s%s", out, errOut)
	}
	if _, err := raw.Exec(b.Context(), unversionedGuard+`
		DROP TRIGGER sqlfence_guard ON unchecked;
		CREATE TRIGGER sqlfence_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON unchecked
			FOR EACH STATEMENT EXECUTE FUNCTION sqlfence.guard_unversioned('unchecked');`); err != nil {
		b.Fatal(err)
	}
	// The connector reads the catalog (and its version) after the swap: both
	// tables' fenced texts carry "@N", and only checked's trigger compares it.
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var epoch atomic.Int64
	m := alternate(b, db, &epoch, 1, "unchecked", "checked")
	b.ReportMetric(m[0], "unchecked-ns/write")
	b.ReportMetric(m[1], "checked-ns/write")
	b.ReportMetric(m[1]/m[0], "checked/unchecked")
}

// unversionedGuard is the guard's statement trigger function before the catalog
// version: BenchmarkCatalogVersion's baseline.
const unversionedGuard = `
CREATE FUNCTION sqlfence.guard_unversioned() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
    ctx pg_catalog.text;
BEGIN
    GET DIAGNOSTICS ctx = PG_CONTEXT;
    IF pg_catalog.starts_with(pg_catalog.current_query(), '/*sqlfence fenced: ')
       AND pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 1
       AND pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.=) 0
       AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on'
       AND TG_ARGV[0] OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(pg_catalog.split_part(
           pg_catalog.substr(pg_catalog.current_query(), 20), '*/', 1), ' ')) THEN
        RETURN NULL;
    END IF;
    PERFORM sqlfence.guard_reject(TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME,
        pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.>) 0);
    RETURN NULL;
END
$fn$;`
