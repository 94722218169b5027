package sqlfence

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// The decision cache is what makes sqlfence cheap: parsing a statement costs tens of
// microseconds, a lookup well under one. It is bounded in entries and in bytes, because
// an application that inlines literals into its SQL produces a new text per call.
const (
	defaultCacheEntries = 10_000
	defaultCacheBytes   = 32 << 20
	cacheShards         = 32
)

type cache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
	hits   atomic.Uint64
	misses atomic.Uint64
}

type cacheShard struct {
	mu       sync.RWMutex
	entries  map[string]*decision
	bytes    int
	maxItems int
	maxBytes int
}

func newCache(maxEntries, maxBytes int) *cache {
	c := &cache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i] = cacheShard{
			entries:  map[string]*decision{},
			maxItems: max(1, maxEntries/cacheShards),
			maxBytes: max(1, maxBytes/cacheShards),
		}
	}
	return c
}

func (c *cache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

func (c *cache) get(key string) (*decision, bool) {
	s := c.shard(key)
	s.mu.RLock()
	d, ok := s.entries[key]
	s.mu.RUnlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return d, ok
}

// size is what an entry holds on to: its key and its rewritten text, plus overhead.
func (d *decision) size(key string) int { return len(key) + len(d.sql) + 256 }

func (c *cache) put(key string, d *decision) {
	s := c.shard(key)
	n := d.size(key)
	if n > s.maxBytes {
		return // a statement larger than the shard's budget is decided each time
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; ok {
		return
	}
	// Evict arbitrary entries (Go's map order is randomised): cheap, and good enough
	// when the working set fits, which is the case the cache exists for.
	for k, old := range s.entries {
		if len(s.entries) < s.maxItems && s.bytes+n <= s.maxBytes {
			break
		}
		s.bytes -= old.size(k)
		delete(s.entries, k)
	}
	s.entries[key] = d
	s.bytes += n
}

// CacheStats reports the decision cache of a connector made by NewConnector or the
// registered driver.
type CacheStats struct {
	Hits, Misses uint64
	Entries      int
	Bytes        int
}

func (c *cache) stats() CacheStats {
	st := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		st.Entries += len(s.entries)
		st.Bytes += s.bytes
		s.mu.RUnlock()
	}
	return st
}
