// What the cache keeps and remembers beyond its entries: the ghost of the entries
// probation dropped, and the doorkeeper that keeps texts decided by shape out until
// they are seen twice.

package engine

import (
	"hash/maphash"
	"sync/atomic"
)

// ghost remembers the hashes of entries dropped from probation, in two generations
// of a bit set (two bits a key): a key is remembered for between one and two
// generations of drops. A false positive only lets a one-off text into the main
// queue, where the hand treats it like any other entry.
type ghost struct {
	bits  [2][]uint64
	cur   int // the generation being filled
	added int // drops recorded in it
	gen   int // drops per generation
}

// newGhost returns the ghost of a shard that holds items entries. A generation
// remembers twice as many drops as the shard holds entries: a statement that comes
// back after up to two to four times the cache's size in one-off texts still counts
// as recurring.
func newGhost(items int) ghost {
	words := 1
	for words*64 < 32*items { // 16 bits a remembered key: about 3 % false positives
		words *= 2
	}
	return ghost{bits: [2][]uint64{make([]uint64, words), make([]uint64, words)}, gen: 2 * items}
}

func (g *ghost) positions(h uint64) (uint64, uint64) {
	m := uint64(len(g.bits[0])*64 - 1)
	// The shard was picked by the low bits; the bit positions use others.
	return h >> 17 & m, h >> 41 & m
}

func (g *ghost) add(h uint64) {
	if g.added >= g.gen {
		g.cur ^= 1
		clear(g.bits[g.cur])
		g.added = 0
	}
	a, b := g.positions(h)
	g.bits[g.cur][a/64] |= 1 << (a % 64)
	g.bits[g.cur][b/64] |= 1 << (b % 64)
	g.added++
}

func (g *ghost) has(h uint64) bool {
	a, b := g.positions(h)
	for _, bits := range g.bits {
		if bits[a/64]&(1<<(a%64)) != 0 && bits[b/64]&(1<<(b%64)) != 0 {
			return true
		}
	}
	return false
}

// doorkeeper lets a text decided by shape into the cache on its second sighting
// only. Texts with inlined values are mostly sent once: caching each would cost a
// store, an eviction and a copy of the text per statement, and push the statements
// that do recur through probation faster. One bit per hash, cleared wholesale after
// as many sightings as the cache has entries; a lost race or a false positive only
// caches a text or leaves it out.
type doorkeeper struct {
	bits  []atomic.Uint64
	seen  atomic.Int64
	reset int64
}

// worthKeeping records text and reports whether it was recorded before.
func (c *cache) worthKeeping(text string) bool {
	k := &c.door
	if len(k.bits) == 0 {
		return true
	}
	if k.seen.Add(1)%k.reset == 0 {
		for i := range k.bits {
			k.bits[i].Store(0)
		}
	}
	h := maphash.String(c.seed, text) >> 7 // the low bits pick the shard
	w, bit := &k.bits[h/64%uint64(len(k.bits))], uint64(1)<<(h%64)
	return w.Or(bit)&bit != 0
}
