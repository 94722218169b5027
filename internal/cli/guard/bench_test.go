package guard

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// BenchmarkGuard is the guard's cost on the driver's normal path: a fenced single-row
// UPDATE by primary key, under a fresh epoch, to a table with the guard and to an
// identical one without it, in the same database and the same run; guarded/unguarded
// is the ratio (go test -run X -bench Guard -count 5 ./internal/cli/guard).
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
	policy := clitest.WriteFile(b, dir, "sqlfence.yaml", "version: 1\ntables: [guarded, unguarded]\n")
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(1)
	db.SetMaxOpenConns(1)
	// One write of each per iteration, taking turns at going first, each timed on
	// its own, compared by their medians: on a shared machine, load that comes and
	// goes then weighs on both alike, and a stall does not count.
	ctx := b.Context()
	var spent [2][]time.Duration
	var epoch int64
	for b.Loop() {
		epoch++
		for k := range 2 {
			i := (k + int(epoch)) % 2
			table := []string{"unguarded", "guarded"}[i]
			start := time.Now()
			if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, epoch), "UPDATE "+table+" SET n = n + 1 WHERE id = $1", epoch%1000+1); err != nil {
				b.Fatal(err)
			}
			spent[i] = append(spent[i], time.Since(start))
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	unguarded, guarded := median(spent[0]), median(spent[1])
	b.ReportMetric(unguarded, "unguarded-ns/write")
	b.ReportMetric(guarded, "guarded-ns/write")
	b.ReportMetric(guarded/unguarded, "guarded/unguarded")
}
