package sqlfence_test

// Performance of sqlfence, in three groups (docs/performance.md):
//
//   - BenchmarkDB: sqlfence against the same SQL on raw pgx, on the test helper's
//     PostgreSQL, interleaved statement by statement, with 1 and 8 workers.
//   - BenchmarkWrapper: the wrapper's own cost per statement over a driver that does
//     nothing, at a cache hit and a cache miss.
//   - BenchmarkDistinctStatements: 20 000 statements of distinct shapes, for the cache's bounds.
//
// One command runs them all, and benchstat summarises the runs:
//
//	go test -run '^$' -bench . -benchmem -count 6 . | tee bench.txt
//	go run golang.org/x/perf/cmd/benchstat@latest bench.txt

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/nopdriver"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

const benchSchema = `
CREATE TABLE bench_items (id int PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE bench_plain (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO bench_items (id, quantity) SELECT g, 0 FROM generate_series(1, 64) g;
INSERT INTO bench_plain (id, n) SELECT g, 0 FROM generate_series(1, 64) g;
`

// The benchmark table is repeatable: one worker writes its row again and again under
// one epoch, and every write must affect a row. In strict mode the second write of a
// row under the same epoch affects none (by design), which would measure sqlfence's
// 0-row classification instead of its normal path.
const benchPolicy = `version: 1
catalog_refresh: 1h
tables:
  - name: bench_items
    mode: repeatable
`

const (
	benchUpdate = `UPDATE bench_items SET quantity = quantity + $2 WHERE id = $1`
	// benchHandFenced is benchUpdate fenced by hand, exactly as sqlfence sends it
	// (the setup checks), so both sides cost the server the same.
	benchHandFenced = `/*sqlfence fenced: bench_items*/ UPDATE bench_items SET quantity = quantity + $2, writer_epoch = $3::bigint WHERE (id = $1) AND bench_items.writer_epoch OPERATOR(pg_catalog.<=) $3::bigint`
	// benchInlined is the UPDATE with its values inlined, as an ORM that renders
	// values into the text sends it: every execution is a new text of one shape.
	benchInlined     = `UPDATE bench_items SET quantity = %d WHERE id = %d`
	benchHandInlined = `/*sqlfence fenced: bench_items*/ UPDATE bench_items SET quantity = %d, writer_epoch = $1::bigint WHERE (id = %d) AND bench_items.writer_epoch OPERATOR(pg_catalog.<=) $1::bigint`
	// benchLiteralInlined is what the application sends without sqlfence when it
	// writes the fence itself with literals: no argument, so pgx sends it in one
	// simple-protocol round trip and prepares nothing. It is the baseline for an
	// application that inlines its values (the epoch parameter sqlfence adds must not
	// cost it a round trip).
	benchLiteralInlined = `/*sqlfence fenced: bench_items*/ UPDATE bench_items SET quantity = %d, writer_epoch = %d::bigint WHERE (id = %d) AND bench_items.writer_epoch OPERATOR(pg_catalog.<=) %d::bigint`
	benchRead           = `SELECT quantity, writer_epoch FROM bench_items WHERE id = $1`
	benchPlainWrite     = `UPDATE bench_plain SET n = n + 1 WHERE id = $1`
	benchEpoch          = 1 << 40 // large, as real epochs from a sequence become
)

// BenchmarkDB compares sqlfence with hand-written SQL on raw pgx against PostgreSQL.
// Absolute times on a shared machine drift by tens of percent from one second to the
// next, so the two sides are never run one after the other: every worker alternates
// between them statement by statement (starting with each side on every other
// iteration), and each side's time is recorded separately. Both sides see the same
// machine at the same moments; their ratios are what docs/performance.md reports:
//
//	throughput-ratio = raw-ns/op ÷ sqlfence-ns/op          (1.00 = as fast as raw pgx)
//	median-ratio     = median raw ÷ median sqlfence latency (the same, robust to stalls)
//
// ns/op is the wall time of one iteration, i.e. one statement on each side. The
// "control" case runs raw pgx against a second raw pgx pool ("raw2"): its spread
// around 1.00 is the noise floor of the ratios on the machine at hand.
func BenchmarkDB(b *testing.B) {
	dsn, policy, p := benchDatabase(b)
	if got := p.Plan(benchUpdate).Fenced; got != benchHandFenced {
		b.Fatalf("sqlfence sends\n\t%s\nbut the hand-written statement is\n\t%s\nupdate benchHandFenced so both sides run the same SQL", got, benchHandFenced)
	}
	if got, want := p.Plan(fmt.Sprintf(benchInlined, 5, 1)).Fenced, fmt.Sprintf(benchHandInlined, 5, 1); got != want {
		b.Fatalf("sqlfence sends\n\t%s\nbut the hand-written statement is\n\t%s", got, want)
	}
	var inlined atomic.Int64 // every inlined statement gets a value never sent before
	open := func(driverName, dsn string) *sql.DB {
		db, err := sql.Open(driverName, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	raw := open("pgx", dsn)
	raw2 := open("pgx", dsn)
	fenced := open("sqlfence", withParam(dsn, "sqlfence_policy", policy))

	// Both sides run under the handler's context; raw pgx ignores the epoch on it.
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	exec := func(db *sql.DB, query string, args ...any) error {
		res, err := db.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("%s: %d rows affected (%v), want 1", query, n, err)
		}
		return nil
	}
	read := func(db *sql.DB, id int) error {
		var q, e int64
		return db.QueryRowContext(ctx, benchRead, id).Scan(&q, &e)
	}
	// Each worker writes its own row, so workers never wait on each other's row locks.
	cases := []struct {
		name, side   string // side: what runs against raw pgx
		subject, raw func(worker int) error
	}{
		{"fenced-update", "sqlfence",
			func(w int) error { return exec(fenced, benchUpdate, w+1, 1) },
			func(w int) error { return exec(raw, benchHandFenced, w+1, 1, int64(benchEpoch)) }},
		{"inlined-update", "sqlfence",
			func(w int) error { return exec(fenced, fmt.Sprintf(benchInlined, inlined.Add(1), w+1)) },
			func(w int) error {
				return exec(raw, fmt.Sprintf(benchHandInlined, inlined.Add(1), w+1), int64(benchEpoch))
			}},
		{"inlined-update-vs-literal", "sqlfence",
			func(w int) error { return exec(fenced, fmt.Sprintf(benchInlined, inlined.Add(1), w+1)) },
			func(w int) error {
				return exec(raw, fmt.Sprintf(benchLiteralInlined, inlined.Add(1), int64(benchEpoch), w+1, int64(benchEpoch)))
			}},
		{"read", "sqlfence",
			func(w int) error { return read(fenced, w+1) },
			func(w int) error { return read(raw, w+1) }},
		{"unprotected-write", "sqlfence",
			func(w int) error { return exec(fenced, benchPlainWrite, w+1) },
			func(w int) error { return exec(raw, benchPlainWrite, w+1) }},
		{"control", "raw2",
			func(w int) error { return exec(raw2, benchHandFenced, w+1, 1, int64(benchEpoch)) },
			func(w int) error { return exec(raw, benchHandFenced, w+1, 1, int64(benchEpoch)) }},
	}
	for _, workers := range []int{1, 8} {
		for _, db := range []*sql.DB{raw, raw2, fenced} {
			// Every worker keeps its connection: without this database/sql keeps two
			// idle connections and 8 workers would reconnect all the time.
			db.SetMaxOpenConns(workers)
			db.SetMaxIdleConns(workers)
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				interleave(b, workers, c.side, c.subject, c.raw)
			})
		}
	}
}

func interleave(b *testing.B, workers int, name string, side, raw func(worker int) error) {
	// Warm up: open every connection, let pgx prepare each statement on each of
	// them, and let sqlfence decide it once.
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range 20 {
				if err := side(w); err != nil {
					b.Error(err)
					return
				}
				if err := raw(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	alternate(b, workers, name, side, raw)
}

// alternate is interleave's measurement: b.N iterations, each running both sides
// one after the other, whichever first on every other iteration.
func alternate(b *testing.B, workers int, name string, side, raw func(worker int) error) {
	var (
		wg      sync.WaitGroup
		next    atomic.Int64 // iterations are handed out to whichever worker is free
		failed  atomic.Bool
		errOnce sync.Once
		runs    = int64(b.N)
		// lat[i] is iteration i's time on each side. Allocated before the timer
		// starts, so recording costs neither side an allocation.
		lat = make([][2]time.Duration, b.N)
	)
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= runs && !failed.Load(); i = next.Add(1) {
				sideFirst := i%2 == 1
				a, z := side, raw
				if !sideFirst {
					a, z = raw, side
				}
				t0 := time.Now()
				errA := a(w)
				t1 := time.Now()
				errZ := z(w)
				t2 := time.Now()
				if errA != nil || errZ != nil {
					errOnce.Do(func() { b.Errorf("iteration %d: %v / %v", i, errA, errZ) })
					failed.Store(true)
					return
				}
				if sideFirst {
					lat[i-1] = [2]time.Duration{t1.Sub(t0), t2.Sub(t1)}
				} else {
					lat[i-1] = [2]time.Duration{t2.Sub(t1), t1.Sub(t0)}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if failed.Load() {
		return
	}
	var sum [2]time.Duration
	sides := [2][]time.Duration{make([]time.Duration, b.N), make([]time.Duration, b.N)}
	for i, l := range lat {
		for s := range l {
			sum[s] += l[s]
			sides[s][i] = l[s]
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(sum[0])/n, name+"-ns/op")
	b.ReportMetric(float64(sum[1])/n, "raw-ns/op")
	// Closed-loop workers: a side's throughput is inversely proportional to the
	// time the workers spend on it.
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "throughput-ratio")
	// The same comparison, robust to the scheduling stalls of a shared machine (a
	// millisecond stall lands on one side of one pair and moves the sums, not the
	// medians).
	b.ReportMetric(float64(median(sides[1]))/float64(median(sides[0])), "median-ratio")
}

// BenchmarkINLists sends IN lists as ORMs build them, their length cycling from 1 to
// 200, from a cold connector (a new one per run, its decision cache empty; the
// connections opened by one SELECT 1): params binds the values (GORM, sqlx:
// `id IN ($2, …, $n+1)`), inlined writes them into the text (bun), every text new.
// The raw side sends the same statements fenced by hand: with parameters, the epoch as
// the last one, as sqlfence sends them; inlined, the epoch a literal too, as the
// application would send the text if it wrote the fence itself (no argument: one
// simple-protocol round trip). Run for the first 1000 statements:
//
//	go test -run '^$' -bench INLists -benchtime 1000x -count 3 .
func BenchmarkINLists(b *testing.B) {
	dsn, policy, p := benchDatabase(b)
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	const longest = 200
	var inlined atomic.Int64
	list := func(n int, elem func(k int) string) string {
		parts := make([]string, n)
		for k := range parts {
			parts[k] = elem(k)
		}
		return strings.Join(parts, ", ")
	}
	// The statement of length n: its text for sqlfence, the hand-fenced text, and
	// the arguments of each (the worker's row first in the list, others missing).
	type stmt struct {
		text, fenced  string
		args, rawArgs []any
	}
	params := func(i, w int) stmt {
		n := 1 + i%longest
		q := "UPDATE bench_items SET quantity = quantity + $1 WHERE id IN (" + list(n, func(k int) string { return "$" + strconv.Itoa(k+2) }) + ")"
		args := []any{1}
		for k := range n {
			args = append(args, w+1+1000*k)
		}
		return stmt{text: q, args: args}
	}
	inline := func(i, w int) stmt {
		n, v := 1+i%longest, inlined.Add(1)
		q := "UPDATE bench_items SET quantity = quantity + 1 WHERE id IN (" + list(n, func(k int) string {
			if k == 0 {
				return strconv.Itoa(w + 1)
			}
			return strconv.FormatInt(1000000*int64(k)+v, 10)
		}) + ")"
		return stmt{text: q}
	}
	for _, c := range []struct {
		name string
		make func(i, w int) stmt
	}{{"params", params}, {"inlined", inline}} {
		b.Run(c.name, func(b *testing.B) {
			raw, err := sql.Open("pgx", dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			fenced, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", policy))
			if err != nil {
				b.Fatal(err)
			}
			defer fenced.Close()
			for _, db := range []*sql.DB{raw, fenced} {
				db.SetMaxOpenConns(1)
				db.SetMaxIdleConns(1)
				if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
					b.Fatal(err)
				}
			}
			// The hand-fenced texts, made before the timer (Plan decides afresh).
			stmts := make([]stmt, b.N)
			for i := range stmts {
				s := c.make(i, 0)
				pl := p.Plan(s.text)
				if s.fenced = pl.Fenced; s.fenced == "" {
					b.Fatalf("not fenced: %s", s.text)
				}
				if s.args == nil {
					// Inlined values: the baseline is what the application sends
					// without sqlfence if it writes the fence itself, the epoch a
					// literal too — no argument, one simple-protocol round trip.
					s.fenced = strings.ReplaceAll(s.fenced, "$"+strconv.Itoa(pl.EpochParam)+"::bigint", strconv.FormatInt(benchEpoch, 10)+"::bigint")
				} else {
					s.rawArgs = append(slices.Clone(s.args), int64(benchEpoch))
				}
				stmts[i] = s
			}
			run := func(db *sql.DB, q string, args []any) error {
				res, err := db.ExecContext(ctx, q, args...)
				if err != nil {
					return err
				}
				if n, err := res.RowsAffected(); err != nil || n != 1 {
					return fmt.Errorf("%.60s…: %d rows affected (%v), want 1", q, n, err)
				}
				return nil
			}
			var i atomic.Int64
			var j atomic.Int64
			alternate(b, 1, "sqlfence",
				func(int) error { s := stmts[i.Add(1)-1]; return run(fenced, s.text, s.args) },
				func(int) error {
					s := stmts[j.Add(1)-1]
					return run(raw, s.fenced, s.rawArgs)
				})
		})
	}
}

// benchDatabase is the benchmarks' database: a new one with benchSchema, and
// benchPolicy written to a file (its path, for a DSN's sqlfence_policy) and loaded.
func benchDatabase(b *testing.B) (dsn, policyPath string, p *sqlfence.Policy) {
	dsn = pgtest.NewDB(b)
	policyPath = filepath.Join(b.TempDir(), "bench.yaml")
	if err := os.WriteFile(policyPath, []byte(benchPolicy), 0o644); err != nil {
		b.Fatal(err)
	}
	p, err := sqlfence.LoadPolicy(policyPath)
	if err != nil {
		b.Fatal(err)
	}
	setup, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer setup.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := setup.ExecContext(ctx, benchSchema); err != nil {
		b.Fatal(err)
	}
	return dsn, policyPath, p
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkWrapper measures what sqlfence adds to one statement, over an inner
// driver that does nothing and allocates nothing: every sqlfence case has a "nop"
// twin that does the same work (including building the statement text) on the
// inner driver directly. The difference is the wrapper's cost.
//
//   - hit: the statement's decision is cached (the steady state of an application
//     that uses parameters), and the connection ran it last, so its memo answers.
//     fenced-update appends the epoch argument; read and passthrough are sent
//     unchanged. hit-mixed cycles through more statements than the memo holds, so
//     the shared cache answers.
//   - miss: a new text every iteration that differs from the last only in a literal
//     value, as with inlined literals: decided by shape (scan, plan lookup, edits).
//   - first-seen: a new shape every iteration (the alias changes): the full
//     analysis — parse, rewrite, verify.
//   - hit-parallel: the hit from every CPU at once, a connection per goroutine.
//   - db: the same hit through database/sql, as an application calls it.
func BenchmarkWrapper(b *testing.B) {
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p.ResolveCatalog = false // nopdriver has no catalog
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	args := []driver.NamedValue{{Ordinal: 1, Value: "a"}, {Ordinal: 2, Value: int64(1)}}
	connector := func(inner string) driver.Connector {
		if inner == "sqlfence" {
			return sqlfence.NewConnector(nopdriver.Connector{}, p)
		}
		return nopdriver.Connector{}
	}
	connect := func(b *testing.B, c driver.Connector) driver.ExecerContext {
		cn, err := c.Connect(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return cn.(driver.ExecerContext)
	}
	hits := []struct{ name, query string }{
		{"fenced-update", `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`},
		{"read", `SELECT quantity, note FROM inventory WHERE sku = $1 AND quantity > $2`},
		{"passthrough", `SELECT id, total FROM orders WHERE customer = $1 AND total > $2`},
	}
	misses := []struct{ name, prefix, suffix string }{
		{"miss/fenced-update", `UPDATE inventory SET quantity = quantity - $1 WHERE sku = 'sku-`, `'`},
		{"miss/passthrough", `SELECT id, total FROM orders WHERE customer = $1 AND ref = 'ref-`, `'`},
		{"first-seen/fenced-update", `UPDATE inventory AS i`, ` SET quantity = quantity - $1 WHERE sku = 'sku-1'`},
		{"first-seen/passthrough", `SELECT id, total FROM orders AS o`, ` WHERE customer = $1 AND ref = 'ref-1'`},
	}
	for _, inner := range []string{"nop", "sqlfence"} {
		for _, h := range hits {
			b.Run("hit/"+h.name+"/"+inner, func(b *testing.B) {
				cn := connect(b, connector(inner))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := cn.ExecContext(ctx, h.query, args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		for _, m := range misses {
			b.Run(m.name+"/"+inner, func(b *testing.B) {
				cn := connect(b, connector(inner))
				buf := append(make([]byte, 0, 256), m.prefix...)
				b.ReportAllocs()
				cpu := processCPU()
				i := 0
				for b.Loop() {
					i++
					// One allocation per iteration for the text, on both twins.
					q := string(append(strconv.AppendInt(buf[:len(m.prefix)], int64(i), 10), m.suffix...))
					if _, err := cn.ExecContext(ctx, q, args[:1]); err != nil {
						b.Fatal(err)
					}
				}
				// On a shared machine wall time per op swings with the load; the CPU
				// time the process spent (the benchmark, the collector) does not.
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
		b.Run("hit-mixed/fenced-update/"+inner, func(b *testing.B) {
			// A connection that cycles through more statements than its memo of
			// recent decisions holds: every lookup goes to the shared cache.
			queries := make([]string, 16)
			for i := range queries {
				queries[i] = fmt.Sprintf("UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1 AND note <> 'n%d'", i)
			}
			cn := connect(b, connector(inner))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := cn.ExecContext(ctx, queries[i%len(queries)], args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("hit-parallel/fenced-update/"+inner, func(b *testing.B) {
			c := connector(inner)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				cn := connect(b, c) // a connection per goroutine, as database/sql uses them
				for pb.Next() {
					if _, err := cn.ExecContext(ctx, hits[0].query, args); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("hit/fenced-update-deep-context/"+inner, func(b *testing.B) {
			// A handler's context as a service builds it: request-scoped values,
			// tracing, a deadline below the epoch. Lookups of keys that are absent
			// (and every sqlfence option usually is) walk the whole chain.
			deep := context.Background()
			for i := range 15 {
				deep = context.WithValue(deep, benchCtxKey(i), i)
			}
			deep = sqlfence.WithEpoch(deep, benchEpoch)
			cn := connect(b, connector(inner))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cn.ExecContext(deep, hits[0].query, args); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, h := range []struct{ name, query string }{hits[0], hits[2]} {
			b.Run("db/"+h.name+"/"+inner, func(b *testing.B) {
				db := sql.OpenDB(connector(inner))
				defer db.Close()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := db.ExecContext(ctx, h.query, "a", 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDistinctStatements sends 20 000 statements, each of a shape of its own
// (most with IN lists of up to 1000 ids, as ORMs build them), through a connector
// with the default cache, and reports what the cache holds afterwards against its
// bounds, and what the heap retains. It fails if a bound does not hold. One op is
// the whole workload.
func BenchmarkDistinctStatements(b *testing.B) {
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p.ResolveCatalog = false // nopdriver has no catalog
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	const statements = 20_000
	var ids strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&ids, "%d, ", 100_000+i*7)
	}
	idList := ids.String() // "100000, 100007, …": 8 bytes an id
	for range b.N {
		b.StopTimer()
		c := sqlfence.NewConnector(nopdriver.Connector{}, p)
		cn, err := c.Connect(ctx)
		if err != nil {
			b.Fatal(err)
		}
		exec := cn.(driver.ExecerContext)
		before := liveHeap()
		b.StartTimer()
		for i := range statements {
			var q string
			// Every statement is of a shape of its own (the alias changes): texts that
			// differ only in values would share a plan and not be cached one by one.
			switch {
			case i%100 == 0: // a protected write: parsed and rewritten
				q = fmt.Sprintf("UPDATE inventory AS i%d SET quantity = %d WHERE sku = 'sku-%d'", i, i%7, i)
			case i%100 == 1: // a protected read: parsed, sent unchanged
				q = fmt.Sprintf("SELECT quantity FROM inventory AS i%d WHERE sku = 'sku-%d'", i, i)
			default: // everything else: parsed, sent unchanged
				n := 1 + (i*7919)%1000
				q = fmt.Sprintf("SELECT id, total FROM orders AS o%d WHERE region = %d AND id IN (%s0)", i, i, idList[:8*n])
			}
			if _, err := exec.ExecContext(ctx, q, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		st, _ := sqlfence.CacheStatsOf(c)
		retained := liveHeap() - before
		runtime.KeepAlive(cn)
		if st.Entries > st.MaxEntries || st.Bytes > st.MaxBytes {
			b.Fatalf("cache over its bounds: %+v", st)
		}
		if retained > int64(st.MaxBytes) {
			b.Fatalf("the heap retains %d bytes after the workload, more than the cache's %d-byte bound", retained, st.MaxBytes)
		}
		b.ReportMetric(float64(st.Entries), "entries")
		b.ReportMetric(float64(st.MaxEntries), "max-entries")
		b.ReportMetric(float64(st.Bytes)/(1<<20), "cache-MiB")
		b.ReportMetric(float64(st.MaxBytes)/(1<<20), "max-MiB")
		b.ReportMetric(float64(retained)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(st.Evictions), "evictions")
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*statements), "ns/statement")
	b.ReportMetric(0, "ns/op") // one op is the whole workload; ns/statement is the figure
}

type benchCtxKey int

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
