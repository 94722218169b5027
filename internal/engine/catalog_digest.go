// What Resolve read, as a digest: two reads of the catalog that returned the same
// rows give the same policy and snapshot, so a connector that reads the catalog again
// and finds the same rows keeps its decisions (the root package's fence.go).

package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
)

// catalogDigest is a multiset hash of every row of every query Resolve ran: for each
// row, a 64-bit hash of the query's text, its arguments and the row's values, under
// each of two seeds, summed. Sums make it independent of the order rows come in (the
// snapshot's queries have no ORDER BY); two seeds make a collision of different reads
// a 2⁻¹²⁸ event. The seeds are the process's own: digests are compared only within
// one process, never stored.
type catalogDigest struct {
	sum  [2]uint64
	rows int
	set  bool
}

var digestSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// digesting returns query with every row it returns added to d.
func digesting(query Querier, d *catalogDigest) Querier {
	return func(ctx context.Context, sql string, args ...any) ([][]any, error) {
		rows, err := query(ctx, sql, args...)
		if err == nil {
			d.add(sql, args, rows)
		}
		return rows, err
	}
}

// add adds the rows a query returned: its text, its arguments and each row.
func (d *catalogDigest) add(sql string, args []any, rows [][]any) {
	var h [2]maphash.Hash
	var head [2]uint64
	for s := range h {
		h[s].SetSeed(digestSeeds[s])
		h[s].WriteString(sql)
		for _, a := range args {
			writeValue(&h[s], a)
		}
		head[s] = h[s].Sum64()
	}
	var buf [8]byte
	for _, row := range rows {
		for s := range h {
			h[s].Reset()
			binary.LittleEndian.PutUint64(buf[:], head[s])
			h[s].Write(buf[:])
			for _, v := range row {
				writeValue(&h[s], v)
			}
			d.sum[s] += h[s].Sum64()
		}
	}
	d.rows += len(rows) + 1
	d.set = true
}

// writeValue writes v with its type and length, so that no two different rows
// write the same bytes.
func writeValue(h *maphash.Hash, v any) {
	var buf [9]byte
	switch x := v.(type) {
	case nil:
		h.WriteByte('n')
	case string:
		buf[0] = 's'
		binary.LittleEndian.PutUint64(buf[1:], uint64(len(x)))
		h.Write(buf[:])
		h.WriteString(x)
	case []byte:
		buf[0] = 'b'
		binary.LittleEndian.PutUint64(buf[1:], uint64(len(x)))
		h.Write(buf[:])
		h.Write(x)
	case int64:
		buf[0] = 'i'
		binary.LittleEndian.PutUint64(buf[1:], uint64(x))
		h.Write(buf[:])
	case bool:
		h.WriteByte('f')
		if x {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
	case float64:
		buf[0] = 'd'
		binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(x))
		h.Write(buf[:])
	default:
		s := fmt.Sprintf("%T:%v", v, v)
		buf[0] = 'o'
		binary.LittleEndian.PutUint64(buf[1:], uint64(len(s)))
		h.Write(buf[:])
		h.WriteString(s)
	}
}

// SameCatalog reports whether p and q were resolved from reads of the catalog that
// returned the same rows, for the same policy: a decision made under one holds under
// the other.
func (p *Policy) SameCatalog(q *Policy) bool {
	return p != nil && q != nil && p.digest.set && p.digest == q.digest
}
