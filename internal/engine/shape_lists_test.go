package engine

import (
	"strconv"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// inListSeeds are statements with lists of elements of one kind, proven IN lists and
// others, for FuzzShape and the tests below.
var inListSeeds = []string{
	`SELECT id, total FROM orders WHERE id IN ($1, $2, $3)`,
	`SELECT id FROM orders WHERE ref IN ('a', 'b') AND id NOT IN (1, 2, 3)`,
	`UPDATE inventory SET quantity = quantity - $1 WHERE sku IN ($2, $3, $4)`,
	`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3) AND note = $4`,
	`UPDATE inventory SET note = 'x' WHERE sku IN ('a', 'b', 'c') RETURNING sku`,
	`DELETE FROM inventory WHERE sku IN ($1,$2,$3) AND quantity IN (1,2)`,
	`UPDATE inventory AS i SET quantity = 0 FROM (SELECT sku FROM orders WHERE id IN (5, 6)) o WHERE i.sku = o.sku AND i.sku IN ($1)`,
	`UPDATE inventory SET quantity = 1 WHERE sku IN ($3, $1, $2)`,
	`UPDATE inventory SET quantity = 1 WHERE sku IN ($1, $1, $2)`,
	`UPDATE inventory SET quantity = $2 WHERE sku IN ($1)`,
	`INSERT INTO inventory (sku, quantity) VALUES ($1, $2)`,
	`INSERT INTO inventory (sku, quantity, note) VALUES ('a', 1, 'n')`,
	`INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = $3 WHERE inventory.sku IN ($4, $5)`,
	`SELECT set_config($1, $2, false)`,
	`SELECT coalesce($1, $2, $3) FROM inventory WHERE sku IN ($4, $5)`,
	`SELECT * FROM inventory WHERE (sku, note) IN (('a', 'b'), ('c', 'd'))`,
	`SELECT * FROM inventory WHERE sku = ANY(ARRAY[$1, $2, $3])`,
	`SELECT * FROM inventory WHERE sku IN (SELECT sku FROM orders WHERE id IN (1, 2))`,
	`SELECT * FROM inventory WHERE sku IN (lower('a'), 'b')`,
	`SELECT * FROM inventory WHERE sku IN ('a'::text, 'b')`,
	`SELECT row($1, $2, $3) = row(1, 2, 3)`,
	`SELECT * FROM inventory WHERE (sku) IN ('a')`,
	`UPDATE inventory SET quantity = 1 WHERE sku IN ($1, $2) AND quantity = ANY('{1,2}')`,
	`SELECT format('%s %s', 'a', 'b') WHERE 1 IN (1, 2)`,
	`WITH w AS (UPDATE inventory SET quantity = 0 WHERE sku IN ($1, $2) RETURNING sku) SELECT * FROM w WHERE sku IN ($3)`,
	`UPDATE jobs SET status = 'x' WHERE id IN ($1, $2)`,
	`DO $$BEGIN PERFORM 1 WHERE 1 IN (1, 2); END$$`,
}

// lengthen returns sql with the length of each list of one kind changed (salt picks
// by how much, keeping at least one element) and, when its parameters were numbered
// in order, numbered in order again.
func lengthen(sql, salt string) string {
	scanned, err := pgtree.ScanTokens(sql, nil)
	if err != nil {
		return sql
	}
	toks, _, _ := shapeOf(sql, scanned)
	seq := seqParams(sql, toks)
	runs := listRuns(toks, seq)
	var b strings.Builder
	at, next, param := 0, 0, 0
	emitParam := func() {
		param++
		b.WriteString("$" + strconv.Itoa(param))
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		b.WriteString(sql[at:t.start])
		if next < len(runs) && runs[next].first == i {
			r := runs[next]
			d := -2
			if len(salt) > 0 {
				d = int(salt[next%len(salt)])%9 - 3
			}
			next++
			m := max(1, r.n+d)
			for k := range m {
				if k > 0 {
					b.WriteString(", ")
				}
				if r.param {
					emitParam()
				} else {
					e := toks[r.first+2*(k%r.n)]
					b.WriteString(sql[e.start:e.end])
				}
			}
			at = toks[r.last()].end
			i = r.last()
			continue
		}
		if seq && t.tok == pg.Token_PARAM {
			emitParam()
		} else {
			b.WriteString(sql[t.start:t.end])
		}
		at = t.end
	}
	b.WriteString(sql[at:])
	return b.String()
}

// TestShapeInLists: IN lists of parameters and of constants that differ only in
// length take one plan, and its decision is exactly the analysis's — the epoch
// parameter moving with the list; lists that are not proven IN value lists do not.
func TestShapeInLists(t *testing.T) {
	p := testPolicy(t)
	params := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			if i > from {
				b.WriteString(", ")
			}
			b.WriteString("$" + strconv.Itoa(i))
		}
		return b.String()
	}
	ints := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(i * 7))
		}
		return b.String()
	}
	for _, c := range []struct {
		a, b string
		hit  bool
	}{
		{`UPDATE inventory SET quantity = quantity - $1 WHERE sku IN (` + params(2, 201) + `)`, `UPDATE inventory SET quantity = quantity - $1 WHERE sku IN ($2)`, true},
		{`UPDATE inventory SET quantity = quantity - $1 WHERE sku IN ($2)`, `UPDATE inventory SET quantity = quantity - $1 WHERE sku IN (` + params(2, 201) + `)`, true},
		{`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3) AND note = $4`, `UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4, $5) AND note = $6`, true},
		{`SELECT id FROM orders WHERE id IN (` + params(1, 3) + `)`, `SELECT id FROM orders WHERE id IN (` + params(1, 50) + `)`, true},
		{`SELECT id FROM orders WHERE id IN (` + ints(3) + `)`, `SELECT id FROM orders WHERE id IN (` + ints(90) + `)`, true},
		{`UPDATE inventory SET note = 'x' WHERE quantity IN (` + ints(2) + `) RETURNING sku`, `UPDATE inventory SET note = 'y' WHERE quantity IN (` + ints(40) + `) RETURNING sku`, true},
		{`DELETE FROM inventory WHERE sku IN ($1, $2) AND quantity IN (1, 2)`, `DELETE FROM inventory WHERE sku IN ($1, $2, $3) AND quantity IN (4)`, true},
		// Not numbered in order: the numbers are the shape's, no list collapses.
		{`UPDATE inventory SET quantity = 1 WHERE sku IN ($2, $1)`, `UPDATE inventory SET quantity = 1 WHERE sku IN ($2, $1, $3)`, false},
		{`UPDATE inventory SET quantity = $3 WHERE sku IN ($1, $2)`, `UPDATE inventory SET quantity = $4 WHERE sku IN ($1, $2, $3)`, false},
		// Not IN lists: a function's arguments, a row, VALUES, ARRAY.
		{`SELECT coalesce($1, $2)`, `SELECT coalesce($1, $2, $3)`, false},
		{`SELECT coalesce('a', 'b')`, `SELECT coalesce('a', 'b', 'c')`, false},
		{`SELECT * FROM inventory WHERE (sku, note) = ($1, $2)`, `SELECT * FROM inventory WHERE (sku, note) = ($1, $2, $3)`, false},
		{`INSERT INTO inventory (sku, quantity) VALUES ($1, $2)`, `INSERT INTO inventory (sku, quantity) VALUES ($1, $2, $3)`, false},
		{`INSERT INTO inventory (sku, quantity) VALUES ('a', 'b')`, `INSERT INTO inventory (sku, quantity) VALUES ('a', 'b', 'c')`, false},
		{`SELECT * FROM inventory WHERE sku = ANY(ARRAY[$1, $2])`, `SELECT * FROM inventory WHERE sku = ANY(ARRAY[$1, $2, $3])`, false},
		{`SELECT set_config($1, $2, false)`, `SELECT set_config($1, $2, $3, false)`, false},
		{`SELECT * FROM inventory WHERE (sku) IN ('a')`, `SELECT * FROM inventory WHERE (sku) IN ('a', 'b')`, true},
		// An IN list inside a function's argument is not in a value position.
		{`SELECT * FROM inventory WHERE coalesce(sku IN ('a', 'b'), false)`, `SELECT * FROM inventory WHERE coalesce(sku IN ('a', 'b', 'c'), false)`, false},
		// A call or an expression among the elements: not a run, the texts differ.
		{`SELECT * FROM inventory WHERE sku IN ('a', 'b')`, `SELECT * FROM inventory WHERE sku IN ('a', lower('b'))`, false},
		{`SELECT * FROM inventory WHERE quantity IN (1, 2)`, `SELECT * FROM inventory WHERE quantity IN (1, -2)`, false},
	} {
		if got := checkShape(t, p, c.a, c.b); got != c.hit {
			t.Errorf("%s\n%s\nshape hit %v, want %v", c.a, c.b, got, c.hit)
		}
	}
}

// TestShapeInListEpoch: the epoch parameter of a fenced write with an IN list is the
// one after its highest parameter for every length, as the argument count requires.
func TestShapeInListEpoch(t *testing.T) {
	e := New(testPolicy(t), 1000, 1<<20)
	for _, n := range []int{3, 1, 2, 200, 7} {
		q := `UPDATE inventory SET quantity = quantity - $1 WHERE sku IN (` + paramList(2, n+1) + `) AND note <> 'x'`
		d := e.Decide(q)
		want := Analyze(e.policy, q)
		if d.act != ActRewrite || d.sql != want.sql || d.epochParam != n+2 || want.epochParam != n+2 {
			t.Fatalf("n=%d: epoch $%d (analysis $%d), want $%d\n%s\n%s", n, d.epochParam, want.epochParam, n+2, d.sql, want.sql)
		}
	}
	if st := e.Stats(); st.ShapeHits != 4 {
		t.Errorf("stats %+v, want 4 decided by shape", st)
	}
}

// TestShapeInListLengthen: every seed, and every golden statement, with its lists
// lengthened and shortened is decided by the plan exactly as by its own analysis.
func TestShapeInListLengthen(t *testing.T) {
	p := testPolicy(t)
	hits := 0
	for _, s := range append(shapeSeedCorpus(t), inListSeeds...) {
		for _, salt := range []string{"", "a", "\x03\x07", "xyz", "\x00\x10"} {
			if checkShape(t, p, s, lengthen(s, salt)) {
				hits++
			}
		}
	}
	if hits == 0 {
		t.Fatal("no lengthened statement took its plan")
	}
}

// TestShapeInListAttacks plants a plan with a benign IN list, then sends texts that
// try to ride on it: each must be decided exactly as its own analysis decides it,
// and a fenced write must bind exactly its own arguments and the epoch after them.
func TestShapeInListAttacks(t *testing.T) {
	p := testPolicy(t)
	for _, c := range []struct {
		plant string
		hits  int // how many of the tries take the plan at least
		tries []string
	}{
		{`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3)`, 2, []string{
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, billing.recalc())`,       // a call in the list
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, (SELECT 1))`,         // a subquery
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3 || $4)`,               // an expression
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($3, $2, $4)`,                 // out of order
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $2, $3)`,                 // a number twice
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $5)`,                 // a gap
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4, $5, $6, $7)`,     // longer
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2)`,                         // shorter
			`UPDATE inventory SET quantity = $1 WHERE sku IN ('a', 'b', 'c')`,              // another kind
			`UPDATE inventory SET writer_epoch = $1 WHERE sku IN ($2, $3, $4)`,             // the epoch column
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3) OR true IN ($4, $5)`, // a list elsewhere
		}},
		{`SELECT id FROM orders WHERE id IN (1, 2)`, 1, []string{
			`SELECT id FROM orders WHERE id IN (1, 2, 3, 4)`,
			`SELECT id FROM orders WHERE id IN (1, billing.recalc())`,
			`SELECT id FROM orders WHERE id IN (1, 2, nextval('s'))`,
			`SELECT id FROM orders WHERE id IN ('1', '2', '3')`,
		}},
		{`SELECT coalesce($1, $2) FROM orders`, 0, []string{
			`SELECT coalesce($1, $2, $3) FROM orders`,
			`SELECT coalesce($1) FROM orders`,
		}},
		{`SELECT set_config('application_name', $1, false)`, 0, []string{
			`SELECT set_config('application_name', $1, $2, false)`,
			`SELECT set_config('role', $1, false)`,
		}},
		{`INSERT INTO inventory (sku, quantity) VALUES ($1, $2)`, 0, []string{
			`INSERT INTO inventory (sku, quantity) VALUES ($1, $2, $3)`,
			`INSERT INTO inventory (sku, quantity) VALUES ($1)`,
		}},
		{`INSERT INTO inventory (sku, quantity) SELECT sku, 1 FROM orders WHERE id IN ($1, $2)`, 2, []string{
			`INSERT INTO inventory (sku, quantity) SELECT sku, 1 FROM orders WHERE id IN ($1, $2, $3)`,
			`INSERT INTO inventory (sku, quantity) SELECT sku, 1 FROM orders WHERE id IN ($1)`,
		}},
		{`UPDATE jobs SET note = $1 WHERE id IN ($2, $3)`, 0, []string{
			`UPDATE jobs SET status = $1 WHERE id IN ($2, $3, $4)`,
		}},
	} {
		e := New(p, 1000, 1<<20)
		e.Decide(c.plant)
		for _, q := range c.tries {
			got := e.Decide(q)
			want := Analyze(p, q)
			if !sameDecision(t, p, q, got, want) {
				t.Errorf("after %s\n%s\ndecided %s, its analysis %s", c.plant, q, outcome(got), outcome(want))
				continue
			}
			if got.act != ActRewrite {
				continue
			}
			s := Session{Epoch: 5, HasEpoch: true}
			n := want.epochParam - 1
			if _, err := e.Bind(got, q, s, n); err != nil {
				t.Errorf("%s: %d arguments refused: %v", q, n, err)
			}
			for _, wrong := range []int{n - 1, n + 1} {
				if _, err := e.Bind(got, q, s, wrong); err == nil {
					t.Errorf("%s: %d arguments accepted, the statement has %d", q, wrong, n)
				}
			}
		}
		if st := e.Stats(); st.ShapeHits < uint64(c.hits) {
			t.Errorf("after %s: %d decided by shape, want at least %d (the test would not reach the plan)", c.plant, st.ShapeHits, c.hits)
		}
	}
}
