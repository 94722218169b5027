package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// firstSightCases are statements whose every iteration is a shape never seen (the
// alias changes): what a new code path, a deploy or an ORM that varies its texts
// costs on first sight. %d is the iteration.
var firstSightCases = []struct{ name, query string }{
	{"fenced-update", `UPDATE inventory AS i%d SET quantity = quantity - $1 WHERE sku = 'sku-1'`},
	{"fenced-insert", `INSERT INTO inventory AS i%d (sku, quantity, note) VALUES ($1, $2, 'new')`},
	{"read", `SELECT id, total FROM orders AS o%d WHERE customer = $1 AND ref = 'ref-1'`},
	{"unprotected-write", `UPDATE orders AS o%d SET total = total + $1 WHERE customer = $2 AND ref = 'ref-1'`},
	{"fenced-update-in-200", `UPDATE inventory AS i%d SET quantity = quantity - $1 WHERE sku IN (` + paramList(2, 201) + `)`},
}

// paramList is "$from, …, $to".
func paramList(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", i)
	}
	return b.String()
}

// BenchmarkFirstSight measures the decision of a text of a new shape through an
// Engine (scan, shape lookup, analysis, plan) against one pg_query.Parse of the same
// text, in the same iteration, alternating which goes first, so that both see the
// machine at the same moment. It reports the ratio (x-parse) besides both times.
//
//	go test -run '^$' -bench FirstSight -count 3 ./internal/engine/
func BenchmarkFirstSight(b *testing.B) {
	for _, c := range firstSightCases {
		b.Run(c.name, func(b *testing.B) {
			e := New(testPolicy(b), 10000, 32<<20)
			var decide, parse time.Duration
			i := 0
			for b.Loop() {
				i++
				q := fmt.Sprintf(c.query, i)
				d0 := func() {
					t := time.Now()
					if d := e.Decide(q); d.act == ActRefuse {
						b.Fatal(d.refusal)
					}
					decide += time.Since(t)
				}
				p0 := func() {
					t := time.Now()
					if _, err := pgquery.Parse(q); err != nil {
						b.Fatal(err)
					}
					parse += time.Since(t)
				}
				if i%2 == 0 {
					d0()
					p0()
				} else {
					p0()
					d0()
				}
			}
			b.ReportMetric(float64(decide)/float64(parse), "x-parse")
			b.ReportMetric(float64(decide.Microseconds())/float64(b.N), "decide-µs")
			b.ReportMetric(float64(parse.Microseconds())/float64(b.N), "parse-µs")
		})
	}
}
