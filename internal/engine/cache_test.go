package engine

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// protectedSpellings are statements PostgreSQL resolves to a protected table or a
// listed function, spelled every way the grammar allows. Each must reach the parser.
var protectedSpellings = []string{
	`UPDATE inventory SET quantity = 1`,
	`UPDATE INVENTORY SET quantity = 1`,
	`update InVeNtOrY set quantity = 1`,
	`UPDATE "inventory" SET quantity = 1`,
	`UPDATE public.inventory SET quantity = 1`,
	`UPDATE "public"."inventory" SET quantity = 1`,
	`UPDATE PUBLIC . INVENTORY SET quantity = 1`,
	`UPDATE public/* a comment */.inventory SET quantity = 1`,
	"UPDATE public.--a line comment\ninventory SET quantity = 1",
	`UPDATE ONLY inventory AS i SET quantity = 1`,
	`UPDATE U&"inventory" SET quantity = 1`,
	`UPDATE U&"\0069nventory" SET quantity = 1`,
	`UPDATE u&"\+000069\+00006Eventory" SET quantity = 1`,
	`UPDATE U&"!0069nventory" UESCAPE '!' SET quantity = 1`,
	`UPDATE public.U&"\0069\006E\0076\0065\006E\0074\006F\0072\0079" SET quantity = 1`,
	`DELETE FROM Inventory WHERE sku = $1`,
	`INSERT INTO "inventory" (sku, quantity) VALUES ('z', 1)`,
	`INSERT INTO INVENTORY (sku, quantity) VALUES ('z', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2`,
	`MERGE INTO Public.Inventory i USING staging s ON i.sku = s.sku WHEN MATCHED THEN DELETE`,
	`WITH x AS (UPDATE INVENTORY SET quantity = 0 RETURNING sku) SELECT * FROM x`,
	`EXPLAIN ANALYZE DELETE FROM "inventory"`,
	`TRUNCATE U&"\0069nventory"`,
	`COPY Inventory FROM STDIN`,
	`PREPARE p AS UPDATE INVENTORY SET quantity = 0`,
	`DO $$ BEGIN UPDATE INVENTORY SET quantity = 0; END $$`,
	`SELECT 1; DELETE FROM inventory`,
	`UPDATE billing.invoices SET total = 1`,
	`UPDATE BILLING.INVOICES SET total = 1`,
	`UPDATE "billing"."invoices" SET total = 1`,
	`UPDATE billing . "invoices" SET total = 1`,
	`UPDATE Invoices SET total = 1`,
	`UPDATE billing.U&"\0069nvoices" SET total = 1`,
	`UPDATE "Orders" SET n = 1`,
	`UPDATE public."Orders" SET n = 1`,
	`UPDATE U&"\004Frders" SET n = 1`,
	`UPDATE U&"Orders" SET n = 1`,
	`UPDATE "odd""name" SET n = 1`,
	`UPDATE U&"odd""name" SET n = 1`,
	`UPDATE café SET n = 1`,
	`UPDATE CAFé SET n = 1`,
	`UPDATE "café" SET n = 1`,
	`UPDATE U&"caf\00E9" SET n = 1`,
	`SELECT billing.recalc()`,
	`SELECT BILLING.RECALC()`,
	`SELECT "billing"."recalc"()`,
	`CALL Billing.U&"recalc"()`,
	`UPDATE jobs SET lease_epoch = lease_epoch + 1, status = 'running'`,
	`UPDATE JOBS SET Status = 'done'`,
}

// TestProtectedSpellings: every spelling PostgreSQL resolves to a protected table, a
// listed function or a claim table is fenced or refused, never sent unchanged; and —
// to show the case is real, not vacuous — the parser finds the protected write or call.
func TestProtectedSpellings(t *testing.T) {
	p := spellingPolicy(t)
	for _, q := range protectedSpellings {
		if !touchesProtected(t, p, q) {
			t.Errorf("%q: the parser finds no protected write or call; the spelling test is wrong", q)
		}
		if d := testEnforcer(t, p).Decide(q); d.act == ActPass {
			t.Errorf("%q: sent unchanged", q)
		}
	}
}

// touchesProtected is the oracle: what the full parse says.
func touchesProtected(t *testing.T, p *Policy, q string) bool {
	t.Helper()
	tree, err := pgquery.Parse(q)
	if err != nil {
		return false
	}
	writes, refusal := findWrites(p, tree)
	return len(writes) > 0 || refusal != nil || admit(p, tree) != nil || claimWrite(p, tree) != nil
}

func passDecisionFor(i int) *Decision { return &Decision{act: ActPass, epochParam: i} }

func checkBounds(t testing.TB, c *cache) CacheStats {
	t.Helper()
	st := c.stats()
	if st.Entries > st.MaxEntries || st.Bytes > st.MaxBytes {
		t.Fatalf("over the bounds: %+v", st)
	}
	mapped := 0
	c.m.Range(func(any, any) bool { mapped++; return true })
	c.shapes.Range(func(any, any) bool { mapped++; return true })
	if mapped != st.Entries {
		t.Fatalf("the map holds %d entries, the shards account for %d", mapped, st.Entries)
	}
	bytes := 0
	for i := range c.shards {
		s := &c.shards[i]
		for _, e := range slices.Concat(s.probation[s.head:], s.main) {
			bytes += e.size
		}
	}
	if bytes != st.Bytes {
		t.Fatalf("entries add up to %d bytes, the shards account for %d", bytes, st.Bytes)
	}
	return st
}

func TestCacheBounds(t *testing.T) {
	for _, tc := range []struct {
		name              string
		entries, bytes    int
		keyLen            int
		wantFull, wantCap int // entries expected once full (0: not checked)
	}{
		{name: "entry bound", entries: 1000, bytes: 32 << 20, keyLen: 40, wantFull: 1000},
		{name: "fewer entries than shards", entries: 5, bytes: 32 << 20, keyLen: 40, wantFull: 5},
		{name: "one entry", entries: 1, bytes: 1 << 20, keyLen: 40, wantFull: 1},
		{name: "byte bound", entries: 100_000, bytes: 256 << 10, keyLen: 2000},
		{name: "tiny byte bound", entries: 100, bytes: 1000, keyLen: 100},
		{name: "disabled", entries: 0, bytes: 1 << 20, keyLen: 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(tc.entries, tc.bytes)
			pad := strings.Repeat("x", tc.keyLen)
			for i := range 5000 {
				key := strconv.Itoa(i) + pad
				c.put(key, passDecisionFor(i))
				if d, ok := c.get(key); ok && d.epochParam != i {
					t.Fatalf("key %d: got the decision for %d", i, d.epochParam)
				}
				if st := c.stats(); st.Entries > st.MaxEntries || st.Bytes > st.MaxBytes {
					t.Fatalf("after %d insertions, over the bounds: %+v", i+1, st)
				}
				if i%500 == 0 {
					checkBounds(t, c)
				}
			}
			st := checkBounds(t, c)
			if tc.wantFull > 0 && st.Entries != tc.wantFull {
				t.Errorf("full cache holds %d entries, want %d", st.Entries, tc.wantFull)
			}
			if tc.name == "byte bound" && st.Bytes < tc.bytes*3/4 {
				t.Errorf("byte-bound cache holds %d of %d bytes: its shards waste the budget", st.Bytes, tc.bytes)
			}
			if tc.entries == 0 && st.Entries != 0 {
				t.Errorf("a disabled cache holds %d entries", st.Entries)
			}
		})
	}
	t.Run("larger than a shard", func(t *testing.T) {
		c := newCache(100, 10_000)
		c.put(strings.Repeat("y", 20_000), Pass)
		if st := checkBounds(t, c); st.Entries != 0 {
			t.Fatalf("an entry larger than the budget was cached: %+v", st)
		}
	})
}

// TestCacheKeepsHotEntries: a stream of one-off statements (inlined literals) must
// not flush the statements the application runs all the time; CLOCK evicts the
// entries not used since the hand last passed.
func TestCacheKeepsHotEntries(t *testing.T) {
	c := newCache(1000, 32<<20)
	hot := make([]string, 50)
	for i := range hot {
		hot[i] = fmt.Sprintf("UPDATE inventory SET quantity = $1 WHERE sku = 'hot-%d'", i)
		c.put(hot[i], passDecisionFor(i))
	}
	missed := 0
	for i := range 20_000 {
		c.put(fmt.Sprintf("SELECT * FROM t WHERE id = %d", i), Pass)
		if i%100 == 0 {
			for _, h := range hot {
				if _, ok := c.get(h); !ok {
					missed++
					c.put(h, Pass)
				}
			}
		}
	}
	// Between two visits of the hot set, 100 one-offs arrive; a random or FIFO
	// policy over 1000 slots would drop a few hot entries on nearly every round.
	if missed > len(hot) {
		t.Fatalf("hot statements missed %d times while one-off statements streamed through", missed)
	}
	checkBounds(t, c)
}

// TestCacheConcurrent hammers one cache from many goroutines (run it with -race):
// the bounds hold, every lookup is counted once, and no lookup returns another
// statement's decision.
func TestCacheConcurrent(t *testing.T) {
	c := newCache(200, 1<<20)
	const workers, perWorker = 16, 4000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k := (i*7 + w) % 500 // a shared working set larger than the cache
				key := "SELECT " + strconv.Itoa(k)
				if d, ok := c.get(key); ok {
					if d.epochParam != k {
						t.Errorf("%s: decision for %d", key, d.epochParam)
					}
					continue
				}
				c.put(key, passDecisionFor(k))
			}
		})
	}
	wg.Wait()
	st := checkBounds(t, c)
	if st.Hits+st.Misses != workers*perWorker {
		t.Fatalf("%d hits + %d misses, want %d lookups", st.Hits, st.Misses, workers*perWorker)
	}
	if st.Evictions == 0 || st.Hits == 0 {
		t.Fatalf("the workload should both hit and evict: %+v", st)
	}
}

// TestCacheMemoryBound runs 100 000 distinct statements (15 000 under the
// WebAssembly parser) through a fence whose cache has a small byte budget, and
// checks the bound against the heap itself: the accounted bytes must never
// exceed the budget, and what the cache really retains must fit in what it
// accounts (so cacheEntryOverhead is not an underestimate).
func TestCacheMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("parses thousands of statements")
	}
	// The bound does not depend on the parser, only the time does: the
	// WebAssembly build (CGO_ENABLED=0) parses several times slower, and there a
	// smaller budget filled by fewer statements checks the same bound.
	budget, statements := 4<<20, 100_000
	if pgquery.Build == "wasm" {
		budget, statements = 1<<20, 15_000
	}
	f := New(spellingPolicy(t), DefaultCacheEntries, budget)
	// The first parse initialises protobuf's descriptors once per process; that is
	// not the cache's memory.
	Analyze(f.policy, `UPDATE inventory SET quantity = 1 WHERE sku = 'warm-up'`)
	before := heapInUse()
	for i := range statements {
		var q string
		// Every text is of a shape of its own (the alias changes), so that each is
		// analysed and cached with the plan for its shape.
		switch i % 100 {
		case 0: // a protected write: parsed and rewritten
			q = fmt.Sprintf("UPDATE inventory AS i%d SET quantity = %d, note = 'n%d' WHERE sku = 'sku-%d'", i, i%7, i, i)
		case 1: // a protected read: parsed, sent unchanged
			q = fmt.Sprintf("SELECT quantity FROM inventory AS i%d WHERE sku = 'sku-%d'", i, i)
		default: // everything else: parsed, sent unchanged
			q = fmt.Sprintf("SELECT id, name, created_at FROM customers AS c%d WHERE id = %d AND region = 'r%d'", i, i, i%13)
		}
		f.Decide(q)
		if i%10_000 == 0 {
			checkBounds(t, f.cache)
		}
	}
	st := checkBounds(t, f.cache)
	retained := heapInUse() - before
	t.Logf("%d distinct statements: %d entries, %d accounted bytes (budget %d), %d bytes retained on the heap, %d evictions",
		statements, st.Entries, st.Bytes, st.MaxBytes, retained, st.Evictions)
	if st.Bytes < budget/2 {
		t.Fatalf("the workload did not fill the byte budget (%d of %d); it tests nothing", st.Bytes, budget)
	}
	if retained > int64(st.Bytes) {
		t.Fatalf("the cache retains %d bytes but accounts for %d: raise cacheEntryOverhead", retained, st.Bytes)
	}
	runtime.KeepAlive(f)
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestConnMemo: a connection's memo answers repeated statements, counts its answers
// as cache hits, and stays correct when the shared cache evicts what it remembers
// or the connection runs more statements than the memo holds.
func TestConnMemo(t *testing.T) {
	f := New(spellingPolicy(t), 16, 1<<20) // small: the loop below evicts constantly
	var memo Memo
	const update = `UPDATE inventory SET quantity = $1 WHERE sku = $2`
	want := Analyze(f.policy, update).sql
	for i := range 200 {
		if d := f.Lookup(&memo, update); d.act != ActRewrite || d.sql != want {
			t.Fatalf("round %d: decision %+v", i, d)
		}
		// More statements than the memo has slots, and than the cache has entries.
		for j := range 2 * memoSlots {
			q := fmt.Sprintf("SELECT %d FROM customers WHERE id = %d", j, i)
			if d := f.Lookup(&memo, q); d.act != ActPass {
				t.Fatalf("%s: decision %+v", q, d)
			}
		}
	}
	st := checkBounds(t, f.cache)
	if st.Hits+st.Misses != 200*(1+2*memoSlots) {
		t.Fatalf("%d hits + %d misses, want every lookup counted once", st.Hits, st.Misses)
	}
	if st.Hits < 199 {
		t.Fatalf("%d hits: the repeated UPDATE was not answered from the memo", st.Hits)
	}
}

// TestConnDecideConcurrent: connections of one connector decide in parallel (each
// used by one goroutine, as database/sql does), sharing the cache. Run with -race.
func TestConnDecideConcurrent(t *testing.T) {
	f := New(spellingPolicy(t), 64, 1<<20)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			var memo Memo // a connection's
			for i := range 2000 {
				// A working set larger than the cache: mostly statements the
				// pre-check passes, and a few protected writes to parse.
				k := strconv.Itoa((i*3 + w) % 100)
				q, want := "SELECT * FROM customers WHERE id = "+k, ActPass
				if k[len(k)-1] == '0' {
					q, want = "UPDATE inventory SET quantity = $1 WHERE sku = 'k"+k+"'", ActRewrite
				}
				if d := f.Lookup(&memo, q); d.act != want || want == ActRewrite && !strings.Contains(d.sql, "'k"+k+"'") {
					t.Errorf("%s: decision %+v", q, d)
					return
				}
			}
		})
	}
	wg.Wait()
	checkBounds(t, f.cache)
}

// testEnforcer is the engine a connector made with default options decides with.
func testEnforcer(tb testing.TB, p *Policy) *Engine {
	tb.Helper()
	return New(p, DefaultCacheEntries, DefaultCacheBytes)
}

// scanWorkload runs statements through c the way a connection does (lookup, put on
// a miss): one in every 100 is one of hot parameterised statements, taken in turn,
// the others are one-off texts (inlined literals). It returns the hit rate of the
// hot statements after every one of them ran three times.
func scanWorkload(c *cache, hot, statements int) float64 {
	hotTexts := make([]string, hot)
	for i := range hotTexts {
		hotTexts[i] = fmt.Sprintf("UPDATE inventory SET quantity = $1 WHERE sku = $2 AND note <> 'hot-%d'", i)
	}
	var hits, lookups int
	for i := range statements {
		q := ""
		if i%100 == 0 {
			q = hotTexts[(i/100)%hot]
		} else {
			q = "UPDATE inventory SET quantity = 1 WHERE sku = 'one-off-" + strconv.Itoa(i) + "'"
		}
		_, ok := c.get(q)
		if !ok {
			c.put(q, Pass)
		}
		if i%100 == 0 && i/100 >= 3*hot {
			lookups++
			if ok {
				hits++
			}
		}
	}
	return float64(hits) / float64(lookups)
}

// TestCacheScanResistance: with 1 % hot parameterised statements among 99 % one-off
// texts, the hot ones keep hitting — also when they recur more slowly than the cache
// turns over (200 hot statements: each comes back after 20 000 one-offs, twice the
// cache's entries), which plain CLOCK or LRU cannot keep.
func TestCacheScanResistance(t *testing.T) {
	for _, hot := range []int{10, 50, 200} {
		c := newCache(DefaultCacheEntries, DefaultCacheBytes)
		if rate := scanWorkload(c, hot, 1_000_000); rate < 0.99 {
			t.Errorf("%d hot statements: hit rate %.4f, want ≥ 0.99", hot, rate)
		}
		checkBounds(t, c)
	}
}

// BenchmarkCacheScan reports the hot statements' hit rate under the scan workload
// (one op is 100 statements).
func BenchmarkCacheScan(b *testing.B) {
	for _, hot := range []int{50, 200} {
		b.Run(fmt.Sprintf("hot=%d", hot), func(b *testing.B) {
			c := newCache(DefaultCacheEntries, DefaultCacheBytes)
			rate := scanWorkload(c, hot, max(b.N*100, 100*10*hot))
			b.ReportMetric(rate, "hot-hit-rate")
			st := checkBounds(b, c)
			b.ReportMetric(float64(st.Entries), "entries")
		})
	}
}
