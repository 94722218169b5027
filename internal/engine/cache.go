// The decision cache: decisions by text, shared by a connector's connections, bounded
// in entries and bytes, with scan-resistant eviction (probation and main), and a
// connection's memo of its last decisions.

package engine

import (
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
)

// The decision cache is what makes sqlfence cheap: deciding a statement that names a
// protected table parses it (tens to hundreds of microseconds), a lookup costs tens of
// nanoseconds. It is bounded in entries and in bytes, because an application that
// inlines literals into its SQL produces a new text per call.
//
// Reads take no lock and write no shared memory in the common case, so a statement
// that every worker runs does not turn into a contended cache line: entries live in a
// sync.Map (lock-free Load), the hit and miss counters are striped, and an entry's
// reference bit is only written when it is not already set. Writes (a miss that
// decided a statement) take the lock of one of a few shards, which keep the bounds.
// In front of the shared cache, each connection keeps a memo of the few decisions it
// looked up last (decisionMemo).
//
// Eviction resists scans: an application that inlines literals sends a stream of texts
// it never sends again, and that stream must not flush the parameterised statements it
// runs all the time. A shard keeps two queues (the S3-FIFO scheme): new entries enter
// a probation FIFO; the entries found referenced when they reach its head move to the
// main queue, the others are dropped and their hashes remembered for a while (the
// ghost). The main queue is a CLOCK over entries that proved themselves once; it only
// gives up an entry when probation is down to its share. A statement seen again after
// its probation entry was dropped (it recurs more slowly than one-offs pass through
// probation) is found in the ghost and goes straight to the main queue.
const (
	DefaultCacheEntries = 10_000
	DefaultCacheBytes   = 32 << 20

	// maxCacheShards bounds how many independently locked parts the bounds are split
	// into. A small cache gets fewer shards, so that every shard can hold a useful
	// number of entries and the per-shard limits add up to the configured ones.
	maxCacheShards      = 32
	minEntriesPerShard  = 16
	minBytesPerShard    = 64 << 10
	cacheCounterStripes = 16

	// What an entry holds on to beyond the bytes of its strings: the entry and the
	// decision structs, the sync.Map nodes and the boxed key, the ring slot; a
	// rewrite's classifier; a refusal's error. TestCacheMemoryBound measures the
	// heap the cache retains and fails if it ever exceeds this accounting.
	cacheEntryOverhead      = 464
	cacheClassifierOverhead = 128
	cacheRefusalOverhead    = 160
)

type cache struct {
	m        sync.Map // text → *cacheEntry
	shapes   sync.Map // shape key → *cacheEntry with the plan for texts of that shape (shape.go)
	seed     maphash.Seed
	shards   []cacheShard
	counts   [cacheCounterStripes]cacheCounters
	maxItems int // the configured bounds, as given to newCache
	maxBytes int
	door     doorkeeper
}

// cacheCounters is one stripe of the hit and miss counts. A lookup adds to a stripe
// picked at random, so goroutines on different CPUs rarely share a cache line even
// when they all run the same statement; stats sums the stripes.
type cacheCounters struct {
	hits, misses, shapeHits atomic.Uint64
	_                       [128 - 24]byte // a stripe per cache-line pair (adjacent-line prefetch)
}

type cacheEntry struct {
	key  string
	d    *Decision
	plan *shapePlan // for an entry of cache.shapes, whose key is a shape key (shape.go)
	size int
	// ref is the reference bit: a hit sets it; probation promotes an entry found
	// with it set, the main queue's hand clears it and evicts only entries found
	// clear.
	ref atomic.Bool
}

// cacheShard keeps the bounds for the keys that hash to it. Every insertion and
// eviction of such a key happens under mu, so the queues, bytes and the maps agree.
type cacheShard struct {
	mu        sync.Mutex
	probation []*cacheEntry // FIFO from probation[head]: entries not yet hit before their turn
	head      int
	probBytes int
	main      []*cacheEntry // entries that were hit on probation; hand walks it in CLOCK order
	hand      int
	bytes     int // both queues
	evictions uint64
	maxItems  int
	maxBytes  int
	ghost     ghost
	_         [64]byte // keep neighbouring shards' locks off one cache line
}

// probationShare is the part of a shard's bounds the probation queue keeps when the
// main queue needs room: one-off texts stay this long before they are dropped.
const probationShare = 10

// newCache returns a cache that holds at most maxEntries decisions and maxBytes
// bytes of them (as accounted by entrySize). A bound ≤ 0 disables caching: every
// statement is decided each time it runs.
func newCache(maxEntries, maxBytes int) *cache {
	c := &cache{seed: maphash.MakeSeed(), maxItems: max(0, maxEntries), maxBytes: max(0, maxBytes)}
	if c.maxItems == 0 || c.maxBytes == 0 {
		return c
	}
	n := 1
	for n < maxCacheShards && c.maxItems/(2*n) >= minEntriesPerShard && c.maxBytes/(2*n) >= minBytesPerShard {
		n *= 2
	}
	c.shards = make([]cacheShard, n)
	// 32 bits a sighting, cleared after half as many sightings as the cache has
	// entries: under 2 % of the bits are set when it is cleared.
	words := 1
	for words*64 < 16*c.maxItems {
		words *= 2
	}
	c.door = doorkeeper{bits: make([]atomic.Uint64, words), reset: max(1, int64(c.maxItems/2))}
	// Split both bounds exactly: the shards' limits add up to the configured ones,
	// never more (a floor per shard plus one for the first remainder shards).
	for i := range c.shards {
		s := &c.shards[i]
		s.maxItems = c.maxItems / n
		if i < c.maxItems%n {
			s.maxItems++
		}
		s.maxBytes = c.maxBytes / n
		if i < c.maxBytes%n {
			s.maxBytes++
		}
		s.ghost = newGhost(s.maxItems)
	}
	return c
}

func (c *cache) shard(key string) (*cacheShard, uint64) {
	h := maphash.String(c.seed, key)
	return &c.shards[h%uint64(len(c.shards))], h
}

func (c *cache) enabled() bool { return len(c.shards) > 0 }

// shape returns the plan for texts of the shape key, or nil, and marks it in use for
// the eviction hand.
func (c *cache) shape(key string) *shapePlan {
	v, ok := c.shapes.Load(key)
	if !ok {
		return nil
	}
	e := v.(*cacheEntry)
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	return e.plan
}

// shapeHit counts a text decided by a plan.
func (c *cache) shapeHit() { c.counts[rand.Uint32()%cacheCounterStripes].shapeHits.Add(1) }

// putShape caches the plan for texts of the shape key.
func (c *cache) putShape(key string, p *shapePlan) {
	c.insert(&c.shapes, key, nil, p)
}

func (c *cache) get(key string) (*Decision, bool) {
	if e, ok := c.entry(key); ok {
		return e.d, true
	}
	return nil, false
}

// entry returns key's entry and counts the entry.
func (c *cache) entry(key string) (*cacheEntry, bool) {
	v, ok := c.m.Load(key)
	if !ok {
		c.counts[rand.Uint32()%cacheCounterStripes].misses.Add(1)
		return nil, false
	}
	e := v.(*cacheEntry)
	c.hit(e)
	return e, true
}

// hit counts a lookup answered by e and marks e as in use for the eviction hand.
func (c *cache) hit(e *cacheEntry) {
	c.counts[rand.Uint32()%cacheCounterStripes].hits.Add(1)
	if !e.ref.Load() { // read first: a hot entry's line stays shared between CPUs
		e.ref.Store(true)
	}
}

// Memo is one connection's memory of the decisions it looked up last.
//
// Measured against PostgreSQL, a shared-cache hit costs several times what it costs in
// a microbenchmark: between two statements the connection waited on the network and
// the server ran on the same CPUs, so hashing the text and walking the map's nodes
// miss the CPU caches. A connection mostly runs a handful of statements over and over
// (a handler's loop, a worker's claim query), and comparing with a few remembered
// keys is cheap on memory the connection touched last. database/sql never uses a driver connection from two goroutines at once, so
// the memo needs no lock.
//
// It remembers entries, not just decisions, so that its hits still count in the
// cache's statistics and keep the entries in use for the eviction hand. An entry the
// shared cache has evicted can stay remembered: decisions never go stale (they depend
// only on the text and the policy), and what that holds on to is bounded by
// memoSlots entries of at most memoMaxEntryBytes, and the application's memoSlots
// query strings, per open connection (pgx's statement cache keeps hundreds).
type Memo struct {
	queries [memoSlots]string
	entries [memoSlots]*cacheEntry
	next    int
}

const (
	memoSlots         = 4
	memoMaxEntryBytes = 16 << 10
)

func (m *Memo) find(query string) *cacheEntry {
	for i, e := range m.entries {
		if e != nil && m.queries[i] == query {
			return e
		}
	}
	return nil
}

// remember keeps e under its own key, the cache's copy of the text, never the
// caller's string: a program may build the text in a buffer it reuses (unsafe.String),
// and a remembered string whose bytes change under it would hand the next statement
// in that buffer the old statement's decision. Comparing with the cache's copy costs
// a comparison of the bytes instead of a pointer check.
func (m *Memo) remember(e *cacheEntry) {
	if e.size > memoMaxEntryBytes {
		return
	}
	m.queries[m.next], m.entries[m.next] = e.key, e
	m.next = (m.next + 1) % memoSlots
}

// entrySize is what an entry holds on to: its key, the strings of its decision, and
// the structures around them. Strings built with strings.Builder may carry up to
// twice their length in capacity, so a rewrite's are counted twice; the cloned key is
// exact but for its size-class rounding.
func entrySize(key string, d *Decision) int {
	n := cacheEntryOverhead + len(key) + len(key)/8 + 2*len(d.sql) + 8*cap(d.tables)
	if cl := d.zeroRows; cl != nil {
		n += cacheClassifierOverhead + 2*len(cl.query) + 8*cap(cl.args)
		if cl.raw != "" {
			// Renumbered on first use (numbered): the raw query, and then the
			// numbered one and its arguments besides.
			n += cacheClassifierOverhead + 4*len(cl.raw) + 8*d.epochParam
		}
		if cl.lazy {
			// Built on first use (classifier.resolve): its query is the statement's
			// own pieces and a few hundred bytes of its own, a parameter an argument.
			n += 2*(len(d.sql)+512) + 8*d.epochParam
		}
	}
	if e := d.refusal; e != nil {
		n += cacheRefusalOverhead + len(e.Table) + len(e.Statement) + 2*len(e.Reason) + len(e.Fix)
	}
	return n
}

// put caches d for key and returns its entry, or nil when it is not cached.
func (c *cache) put(key string, d *Decision) *cacheEntry {
	return c.insert(&c.m, key, d, nil)
}

func (c *cache) insert(m *sync.Map, key string, d *Decision, plan *shapePlan) *cacheEntry {
	if len(c.shards) == 0 {
		return nil
	}
	s, h := c.shard(key)
	var n int
	if plan != nil {
		n = cacheEntryOverhead + len(key) + len(key)/8 + plan.size()
	} else {
		n = entrySize(key, d)
	}
	if n > s.maxBytes {
		return nil // larger than the shard's whole budget: decided each time it runs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := m.Load(key); ok {
		return v.(*cacheEntry) // another connection decided the same text first
	}
	for s.len() >= s.maxItems || s.bytes+n > s.maxBytes {
		c.evict(s) // terminates: an empty shard always has room for n ≤ maxBytes
	}
	// The key is copied so that the cache never pins a larger buffer the
	// application's text was sliced from, which the byte bound would not see.
	e := &cacheEntry{key: strings.Clone(key), d: d, plan: plan, size: n}
	if s.ghost.has(h) {
		s.main = append(s.main, e) // dropped from probation not long ago: it recurs
	} else {
		s.probation = append(s.probation, e)
		s.probBytes += n
	}
	s.bytes += n
	m.Store(e.key, e)
	return e
}

func (s *cacheShard) len() int { return len(s.probation) - s.head + len(s.main) }

// evict makes room in s, which must be locked and not empty: it drops an entry from
// probation, or when probation is down to its share, from the main queue.
func (c *cache) evict(s *cacheShard) {
	for {
		inProbation := len(s.probation) - s.head
		if inProbation == 0 || len(s.main) > 0 &&
			inProbation*probationShare <= s.maxItems && s.probBytes*probationShare <= s.maxBytes {
			c.evictMain(s)
			return
		}
		e := s.probation[s.head]
		s.probation[s.head] = nil
		s.head++
		if s.head > 32 && 2*s.head > len(s.probation) {
			s.probation = append(s.probation[:0], s.probation[s.head:]...)
			clear(s.probation[len(s.probation):cap(s.probation)])
			s.head = 0
		}
		s.probBytes -= e.size
		if e.ref.Load() {
			// Hit while on probation: it moves to the main queue, and the loop
			// looks for room again.
			e.ref.Store(false)
			s.main = append(s.main, e)
			continue
		}
		c.drop(s, e)
		s.ghost.add(maphash.String(c.seed, e.key))
		return
	}
}

// evictMain drops the first entry of the main queue the CLOCK hand finds
// unreferenced since its last pass. After two full turns it drops the one where the
// hand stands, so lookups setting bits concurrently cannot keep an insertion waiting.
func (c *cache) evictMain(s *cacheShard) {
	for turns := 2 * len(s.main); ; turns-- {
		e := s.main[s.hand]
		if turns > 0 && e.ref.Load() {
			e.ref.Store(false)
			s.hand = (s.hand + 1) % len(s.main)
			continue
		}
		c.drop(s, e)
		last := len(s.main) - 1
		s.main[s.hand] = s.main[last]
		s.main[last] = nil
		s.main = s.main[:last]
		if s.hand >= len(s.main) {
			s.hand = 0
		}
		return
	}
}

func (c *cache) drop(s *cacheShard, e *cacheEntry) {
	if e.plan != nil {
		c.shapes.Delete(e.key)
	} else {
		c.m.Delete(e.key)
	}
	s.bytes -= e.size
	s.evictions++
}

// CacheStats is the root package's CacheStats, field for field (it converts).
type CacheStats struct {
	Hits, Misses, ShapeHits, Evictions   uint64
	Entries, Bytes, MaxEntries, MaxBytes int
}

func (c *cache) stats() CacheStats {
	st := CacheStats{MaxEntries: c.maxItems, MaxBytes: c.maxBytes}
	for i := range c.counts {
		st.Hits += c.counts[i].hits.Load()
		st.Misses += c.counts[i].misses.Load()
		st.ShapeHits += c.counts[i].shapeHits.Load()
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += s.len()
		st.Bytes += s.bytes
		st.Evictions += s.evictions
		s.mu.Unlock()
	}
	return st
}
