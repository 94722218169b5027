package sqlfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
)

// coldStatements is how many statements of each kind the cold-pool catalogue holds.
const coldStatements = 100

// coldCatalogue is an application's statements as a deploy first sends them: reads,
// fenced writes and unprotected writes, each a statement of its own (a shape no other
// has: the alias differs), with parameters.
func coldCatalogue() (queries []string, kinds []int) {
	for i := range coldStatements {
		queries = append(queries,
			fmt.Sprintf(`SELECT r%d.quantity, r%d.writer_epoch FROM bench_items AS r%d WHERE r%d.id = $1`, i, i, i, i),
			fmt.Sprintf(`UPDATE bench_items AS w%d SET quantity = w%d.quantity + 1 WHERE w%d.id = $1`, i, i, i),
			fmt.Sprintf(`UPDATE bench_plain AS p%d SET n = p%d.n + 1 WHERE p%d.id = $1`, i, i, i))
		kinds = append(kinds, coldRead, coldFenced, coldPlain)
	}
	return queries, kinds
}

const (
	coldRead = iota
	coldFenced
	coldPlain
)

// BenchmarkColdPools is a deploy: a fresh pool on each side — sqlfence with a new
// connector (empty decision cache, the catalog not read yet) and raw pgx — runs the
// catalogue of 300 distinct statements once each, alternating sides statement by
// statement (the first side alternates too). The raw side runs each statement as
// sqlfence sends it (Plan), with the epoch as its argument, so both cost the server
// the same. One op is one pool per side through the whole catalogue; the first
// statement includes connecting (and, on sqlfence's side, readying the fence).
//
//	go test -run '^$' -bench ColdPools -benchtime 10x -count 3 .
//
// throughput-ratio is raw time ÷ sqlfence time over the catalogue (after-first-ratio
// the same without the first statement); extra-µs/<kind>
// is sqlfence's time over raw per statement of that kind (the first statement of a
// pool counted apart, as extra-µs/first).
func BenchmarkColdPools(b *testing.B) {
	dsn, policy, p := benchDatabase(b)
	queries, kinds := coldCatalogue()
	rawQueries := make([]string, len(queries))
	for i, q := range queries {
		rawQueries[i] = q
		if kinds[i] == coldFenced {
			plan := p.Plan(q)
			if plan.Err != nil || plan.Fenced == "" {
				b.Fatalf("%s: not fenced (%v)", q, plan.Err)
			}
			rawQueries[i] = plan.Fenced
		}
	}
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	fencedDSN := withParam(dsn, "sqlfence_policy", policy)
	var (
		sum   [2]time.Duration    // [sqlfence, raw]
		kind  [3][2]time.Duration // by kind, first statements excluded
		first [2]time.Duration
	)
	run := func(db *sql.DB, q string, kind int, args ...any) (time.Duration, error) {
		t0 := time.Now()
		var err error
		if kind == coldRead {
			var a, e int64
			err = db.QueryRowContext(ctx, q, args...).Scan(&a, &e)
		} else {
			_, err = db.ExecContext(ctx, q, args...)
		}
		return time.Since(t0), err
	}
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		fenced, err := sql.Open("sqlfence", fencedDSN)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := sql.Open("pgx", dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for i, q := range queries {
			id := 1 + i%64
			var d [2]time.Duration
			var errs [2]error
			fencedFirst := (n+i)%2 == 0
			for side := range 2 {
				if fencedFirst == (side == 0) {
					d[0], errs[0] = run(fenced, q, kinds[i], id)
				} else {
					rawArgs := []any{id}
					if kinds[i] == coldFenced {
						rawArgs = append(rawArgs, int64(benchEpoch))
					}
					d[1], errs[1] = run(raw, rawQueries[i], kinds[i], rawArgs...)
				}
			}
			if errs[0] != nil || errs[1] != nil {
				b.Fatalf("%s: %v / %v", q, errs[0], errs[1])
			}
			for s := range 2 {
				sum[s] += d[s]
				if i == 0 {
					first[s] += d[s]
				} else {
					kind[kinds[i]][s] += d[s]
				}
			}
		}
		b.StopTimer()
		fenced.Close()
		raw.Close()
		b.StartTimer()
	}
	nf := float64(b.N)
	per := nf * coldStatements
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "throughput-ratio")
	// The same without each pool's first statement, which on sqlfence's side reads
	// the catalog: what the rest of the catalogue costs at first sight.
	b.ReportMetric(float64(sum[1]-first[1])/float64(sum[0]-first[0]), "after-first-ratio")
	b.ReportMetric(float64(first[0]-first[1])/nf/1e3, "extra-µs/first")
	b.ReportMetric(float64(kind[coldRead][0]-kind[coldRead][1])/(per-nf)/1e3, "extra-µs/read") // statement 0 is a read
	b.ReportMetric(float64(kind[coldFenced][0]-kind[coldFenced][1])/per/1e3, "extra-µs/fenced")
	b.ReportMetric(float64(kind[coldPlain][0]-kind[coldPlain][1])/per/1e3, "extra-µs/unprotected")
	b.ReportMetric(float64(sum[0])/nf/float64(len(queries))/1e3, "sqlfence-µs/statement")
	b.ReportMetric(float64(sum[1])/nf/float64(len(queries))/1e3, "raw-µs/statement")
}
