package engine

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Attacks on decisions by shape with IN lists of any length and on the literal epoch
// of derived decisions: a plan is planted with one text, and texts of its shape with
// lists of other lengths, other element spellings and other surroundings are decided
// by it. Each must be decided exactly as its own analysis decides it (checkShape,
// which also checks the derived decision's literal form against the literal form's
// own check), and through the engine a fenced write must bind exactly its own
// arguments and the epoch after them.

// joinN returns n elements made by f, separated by sep.
func joinN(n int, sep string, f func(i int) string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(f(i))
	}
	return b.String()
}

func TestShapeAttackLists(t *testing.T) {
	p := testPolicy(t)
	q := func(i int) string { return "'s" + strconv.Itoa(i) + "'" }
	num := func(i int) string { return strconv.Itoa(i) }
	hits := 0
	par := func(from int) func(int) string {
		return func(i int) string { return "$" + strconv.Itoa(from+i) }
	}
	for _, c := range [][]string{
		// Strings spelled every way the scanner makes an SCONST of.
		{`UPDATE inventory SET note = 'x' WHERE sku IN ('a', 'b')`,
			`UPDATE inventory SET note = 'x' WHERE sku IN ('a''b', E'\'', E'\\', $$x$$, $q$'$q$, 'c')`,
			`UPDATE inventory SET note = 'x' WHERE sku IN ($$ $1::bigint $$)`,
			`UPDATE inventory SET note = 'x' WHERE sku IN (E'$1::bigint', '" WHERE true --')`,
			`UPDATE inventory SET note = 'x' WHERE sku IN ('a'
'b', 'c')`,
			`UPDATE inventory SET note = 'x' WHERE sku IN ('a' /* , 'b' */, 'c' -- x
)`,
			`UPDATE inventory SET note = 'x' WHERE sku IN (U&'a', 'b')`,
			`UPDATE inventory SET note = 'x' WHERE sku IN (text 'a', 'b')`},
		// Bit strings, hex strings, numbers and their signs.
		{`UPDATE inventory SET quantity = 1 WHERE note::bit(3) IN (B'101', B'001')`,
			`UPDATE inventory SET quantity = 1 WHERE note::bit(3) IN (B'101')`,
			`UPDATE inventory SET quantity = 1 WHERE note::bit(3) IN (B'101', B'001', B'111', B'000')`,
			`UPDATE inventory SET quantity = 1 WHERE note::bit(3) IN (X'A', X'B', X'C')`},
		{`UPDATE inventory SET quantity = 1 WHERE quantity IN (1, 2)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (1, 2, 3, 4, 5)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (1, -2, 3)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (1, - 2)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (1.5, 2.5, 3.5)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (2147483648, 9223372036854775808, 1e400)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (0x10, 0o7, 0b1, 1_000)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (1, 2, 3)ORDER BY 1`,
			`UPDATE inventory SET quantity = 1 WHERE quantity IN (1,2,3)`},
		{`UPDATE inventory SET quantity = 1 WHERE quantity NOT IN (1, 2)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity NOT IN (1)`,
			`UPDATE inventory SET quantity = 1 WHERE quantity NOT IN (1, 2, 3, 4)`},
		// IN lists in other clauses: SET, RETURNING, a CTE, ON CONFLICT, MERGE,
		// ORDER BY, GROUP BY, a function's argument, a DO body.
		{`UPDATE inventory SET quantity = CASE WHEN sku IN ('a', 'b') THEN 1 ELSE 2 END WHERE note = 'n'`,
			`UPDATE inventory SET quantity = CASE WHEN sku IN ('a', 'b', 'c') THEN 1 ELSE 2 END WHERE note = 'n'`,
			`UPDATE inventory SET quantity = CASE WHEN sku IN ('a') THEN 1 ELSE 2 END WHERE note = 'n'`},
		{`UPDATE inventory SET quantity = 1 WHERE note = 'n' RETURNING sku IN ('a', 'b')`,
			`UPDATE inventory SET quantity = 1 WHERE note = 'n' RETURNING sku IN ('a', 'b', 'c')`},
		{`WITH w AS (SELECT sku FROM orders WHERE id IN (1, 2)) UPDATE inventory SET quantity = 0 WHERE sku IN (SELECT sku FROM w) AND note IN ('a', 'b')`,
			`WITH w AS (SELECT sku FROM orders WHERE id IN (1, 2, 3)) UPDATE inventory SET quantity = 0 WHERE sku IN (SELECT sku FROM w) AND note IN ('a')`},
		{`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note IN ('x', 'y')`,
			`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note IN ('x', 'y', 'z')`,
			`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note IN ('x')`},
		{`INSERT INTO inventory (sku, quantity) SELECT sku, 1 FROM orders WHERE id IN (1, 2) RETURNING sku`,
			`INSERT INTO inventory (sku, quantity) SELECT sku, 1 FROM orders WHERE id IN (1, 2, 3) RETURNING sku`},
		{`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND s.n IN ('x', 'y') THEN UPDATE SET quantity = 3`,
			`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND s.n IN ('x', 'y', 'z') THEN UPDATE SET quantity = 3`,
			`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND s.n IN ('x') THEN UPDATE SET quantity = 3`},
		{`SELECT sku FROM inventory ORDER BY sku IN ('a', 'b')`, `SELECT sku FROM inventory ORDER BY sku IN ('a', 'b', 'c')`},
		{`SELECT count(*) FROM inventory GROUP BY sku IN ('a', 'b')`, `SELECT count(*) FROM inventory GROUP BY sku IN ('a')`},
		{`SELECT sku FROM inventory WHERE 1 IN (1, 2) LIMIT 1`, `SELECT sku FROM inventory WHERE 1 IN (1, 2, 3) LIMIT 1`},
		{`DO $$BEGIN UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b'); END$$`,
			`DO $$BEGIN UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b', 'c'); END$$`},
		{`SELECT * FROM inventory WHERE (sku, note) IN (('a', 'b'), ('c', 'd'))`,
			`SELECT * FROM inventory WHERE (sku, note) IN (('a', 'b'), ('c', 'd'), ('e', 'f'))`},
		{`SELECT * FROM inventory WHERE sku IN (('a'), ('b'))`, `SELECT * FROM inventory WHERE sku IN (('a'), ('b'), ('c'))`},
		{`SELECT * FROM inventory WHERE sku = ANY (ARRAY['a', 'b'])`, `SELECT * FROM inventory WHERE sku = ANY (ARRAY['a', 'b', 'c'])`},
		// Parameters: the epoch's number moves with the list; the app's own numbers
		// must not collide with it.
		{`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3) AND note = $4`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4, $5, $6) AND note = $7`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2) AND note = $3`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4) AND note = $5::text`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4) AND note = $4`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4) AND note = $6`},
		{`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3) RETURNING $4::bigint`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4) RETURNING $5::bigint`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN ($2) RETURNING $3::bigint`},
		{`INSERT INTO inventory (sku, quantity) SELECT sku, $1 FROM orders WHERE id IN ($2, $3)`,
			`INSERT INTO inventory (sku, quantity) SELECT sku, $1 FROM orders WHERE id IN ($2, $3, $4, $5)`,
			`INSERT INTO inventory (sku, quantity) SELECT sku, $1 FROM orders WHERE id IN ($2)`},
		{`INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = $3 WHERE inventory.sku IN ($4, $5)`,
			`INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = $3 WHERE inventory.sku IN ($4)`,
			`INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = $3 WHERE inventory.sku IN ($4, $5, $6, $7)`},
		{`UPDATE inventory AS "i$1::bigint" SET quantity = 1 WHERE sku IN ('a', 'b')`,
			`UPDATE inventory AS "i$1::bigint" SET quantity = 1 WHERE sku IN ('a', 'b', 'c')`},
		{`UPDATE inventory AS "i$1::bigint" SET quantity = $1 WHERE sku IN ($2, $3)`,
			`UPDATE inventory AS "i$1::bigint" SET quantity = $1 WHERE sku IN ($2, $3, $4)`},
		// An IN list next to the fence's edit: the last value of a VALUES row, the
		// WHERE clause the fence closes, comments where the shape has none.
		{`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a', 'b'))`,
			`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a', 'b', 'c'))`,
			`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a'))`,
			`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a', 'b', 'c')/* c */)`,
			`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a', 'b', 'c') -- c
)`},
		{`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a', 'b')), ('b', 'y' IN ('c'))`,
			`INSERT INTO inventory (sku, note) VALUES ('a', 'x' IN ('a')), ('b', 'y' IN ('c', 'd', 'e'))`},
		{`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b')`,
			`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b', 'c')/* x */`,
			`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b', 'c') -- x`,
			`UPDATE inventory SET quantity = 1 WHERE /* x */ sku IN ('a') /* y */`,
			`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b', 'c');`},
		{`DELETE FROM inventory WHERE sku IN ('a', 'b')`,
			`DELETE FROM inventory WHERE sku IN ('a', 'b', 'c')--`,
			`DELETE FROM inventory WHERE sku IN ('a')/**/`},
		// Long lists: near the size limit and past the protocol's parameter count.
		{`UPDATE inventory SET note = 'x' WHERE quantity IN (1, 2)`,
			`UPDATE inventory SET note = 'x' WHERE quantity IN (` + joinN(MaxStatementBytes/8, ",", num) + `)`,
			`UPDATE inventory SET note = 'x' WHERE quantity IN (` + joinN(MaxStatementBytes/2-40, ",", func(int) string { return "1" }) + `)`},
		{`UPDATE inventory SET note = 'x' WHERE sku IN ('a', 'b')`,
			`UPDATE inventory SET note = 'x' WHERE sku IN (` + joinN(50000, ",", q) + `)`},
		{`UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3)`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN (` + joinN(65533, ",", par(2)) + `)`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN (` + joinN(65534, ",", par(2)) + `)`,
			`UPDATE inventory SET quantity = $1 WHERE sku IN (` + joinN(70000, ",", par(2)) + `)`},
		// Exactly at the size limit, and one byte past it.
		{`UPDATE inventory SET note = 'x' WHERE sku IN ('a', 'b')`, atSize(MaxStatementBytes), atSize(MaxStatementBytes + 1)},
	} {
		plant := c[0]
		for _, b := range c[1:] {
			if checkShape(t, p, plant, b) {
				hits++
			} else if testing.Verbose() {
				t.Logf("no plan: %.120s", b)
			}
			checkShape(t, p, b, plant)
		}
	}
	// The plan must reach most of the tries, or the test checks nothing.
	if hits < 25 {
		t.Errorf("%d tries decided by plan, want at least 25", hits)
	}
}

// TestShapeAttackLiteral: fenced writes without arguments decided by a plan (IN lists
// of other lengths, the application's own "$1::bigint" in strings, comments and
// quoted names, operators and casts touching the fence's neighbours, several
// statements) get the literal form their own check gives, for epochs at both kinds'
// ends; a literal form the own check refuses parses as the decided text with the
// epoch a constant in each epoch parameter's place.
func TestShapeAttackLiteral(t *testing.T) {
	p := testPolicy(t)
	planned := 0
	epochs := []int64{1, 9, 1<<31 - 1, 1 << 31, 1<<53 + 1, 1<<63 - 1}
	for _, c := range [][]string{
		{`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b') AND note = 'x'`,
			`UPDATE inventory SET quantity = 2 WHERE sku IN ('$1::bigint', ' $1::bigint', '($1::bigint', ',$1::bigint') AND note = ' $1::bigint'`,
			`UPDATE inventory SET quantity = 3 WHERE sku IN ('a' /* $1::bigint */, 'b', 'c') AND note = 'x' -- $1::bigint`,
			`UPDATE inventory SET quantity = 4 WHERE sku IN ('a', '''', E'\' $1::bigint') AND note = 'x'`,
			`UPDATE inventory SET quantity = 5 WHERE sku IN ('a') AND note = $$ $1::bigint $$`},
		{`UPDATE inventory SET quantity = quantity-1 WHERE quantity IN (1, 2)`,
			`UPDATE inventory SET quantity = quantity-9 WHERE quantity IN (2147483647, 2147483646, 3)`,
			`UPDATE inventory SET quantity = quantity-0 WHERE quantity IN (7)`},
		{`UPDATE inventory SET note = 'a'||'b' WHERE sku IN ('a', 'b')RETURNING sku`,
			`UPDATE inventory SET note = 'c'||'d' WHERE sku IN ('c', 'd', 'e')RETURNING sku`},
		{`UPDATE inventory AS "x $1::bigint" SET quantity = 1 WHERE sku IN ('a', 'b')`,
			`UPDATE inventory AS "x $1::bigint" SET quantity = 2 WHERE sku IN ('a', 'b', 'c')`},
		{`UPDATE inventory AS "(" SET quantity = 1 WHERE sku IN ('a', 'b')`,
			`UPDATE inventory AS "(" SET quantity = 2 WHERE sku IN ('a')`},
		{`INSERT INTO inventory (sku, quantity) SELECT sku, 1 FROM orders WHERE id IN (1, 2)`,
			`INSERT INTO inventory (sku, quantity) SELECT sku, 2 FROM orders WHERE id IN (3, 4, 5, 6)`},
		{`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note IN ('x', 'y')`,
			`INSERT INTO inventory (sku, quantity) VALUES ('$1::bigint', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 3 WHERE inventory.note IN ('x')`},
		{`DELETE FROM inventory WHERE sku IN ('a', 'b'); DELETE FROM inventory WHERE sku IN ('c')`,
			`DELETE FROM inventory WHERE sku IN ('a'); DELETE FROM inventory WHERE sku IN ('c', 'd', ' $1::bigint')`},
		{`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b') AND quantity > 1::int`,
			`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b', 'c') AND quantity > 2::int`},
	} {
		e := New(p, DefaultCacheEntries, DefaultCacheBytes)
		e.decide(c[0])
		for _, q := range c[1:] {
			d, shaped := e.decide(q)
			if shaped && d.fromPlan != nil {
				planned++
			}
			if want := Analyze(p, q); !sameDecision(t, p, q, d, want) {
				t.Fatalf("after %s\n%s\ndecided %s, its analysis %s", c[0], q, outcome(d), outcome(want))
			}
			if d.act != ActRewrite || d.epochParam != 1 {
				continue
			}
			for _, epoch := range epochs {
				got, ok := (&Bound{D: d, Send: d.sql, Epoch: epoch, Fenced: true}).Literal()
				own := &Decision{act: d.act, sql: d.sql, epochParam: d.epochParam}
				want, wantOK := (&Bound{D: own, Send: own.sql, Epoch: epoch, Fenced: true}).Literal()
				// The plan cuts only where the fence wrote the epoch, where the
				// text's own check also cuts the application's "$1::bigint" and
				// then refuses: the plan may give a form the own check does not,
				// which must then parse as the decided text.
				if wantOK && (!ok || got != want) {
					t.Errorf("%s, epoch %d: literal form %q (%v), by its own check %q (%v)", d.sql, epoch, got, ok, want, wantOK)
				}
				if ok {
					if exp, g := withConstant(treeJSON(t, d.sql), epoch), stripLocations(treeJSON(t, got)); !reflect.DeepEqual(g, exp) {
						t.Errorf("%s does not parse as %s with the epoch %d as a constant", got, d.sql, epoch)
					}
				}
			}
		}
	}
	t.Logf("%d texts given a literal plan", planned)
	if planned < 8 {
		t.Errorf("%d texts given a literal plan, want at least 8 (the test would not reach the plan)", planned)
	}
}

// TestShapeAttackListAtBounds: a list at the parser's bound — the deepest nesting the
// analysis takes, with the IN list at its bottom and in the levels' chains — decided
// by plan for other lengths, short and long, exactly as by analysis: a length the
// analysis refuses for depth must not pass by plan.
func TestShapeAttackListAtBounds(t *testing.T) {
	p := testPolicy(t)
	hits := 0
	for _, form := range []func(depth int, list string) string{
		func(d int, list string) string {
			return `UPDATE inventory SET quantity = 1 WHERE ` + strings.Repeat("(", d) + `sku IN (` + list + `)` + strings.Repeat(")", d)
		},
		func(d int, list string) string {
			return `UPDATE inventory SET quantity = 1 WHERE sku IN (` + list + `) AND quantity = ` + strings.Repeat("(1+", d) + "1" + strings.Repeat(")", d)
		},
		func(d int, list string) string {
			return `UPDATE inventory SET quantity = 1 WHERE sku IN (` + list + `)` + strings.Repeat(" AND sku IN ("+list+")", d)
		},
		func(d int, list string) string {
			return `SELECT 1 WHERE ` + strings.Repeat("1 IN (1, 2) AND (", d) + `1 IN (` + list + `)` + strings.Repeat(")", d)
		},
	} {
		// The deepest the analysis takes with a two-element list.
		lo, hi := 0, 4000
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if Analyze(p, form(mid, `'a', 'b'`)).act == ActRefuse {
				hi = mid - 1
			} else {
				lo = mid
			}
		}
		if lo == 0 {
			t.Fatalf("refused at every depth: %.80s", form(1, `'a'`))
		}
		for _, d := range []int{lo, lo + 1} {
			plant := form(d, `'a', 'b'`)
			for _, n := range []int{1, 3, 50, 3000} {
				other := form(d, joinN(n, ", ", func(i int) string { return "'v" + strconv.Itoa(i) + "'" }))
				if len(other) > MaxStatementBytes {
					continue
				}
				if checkShape(t, p, plant, other) && d == lo {
					hits++
				}
				checkShape(t, p, other, plant)
			}
		}
	}
	if hits < 12 {
		t.Errorf("%d lists at the bound decided by plan, want at least 12", hits)
	}
}

// TestShapeAttackEscapes: ASCII texts whose strings decode to bytes the parser
// refuses (a NUL, invalid UTF-8, a lone surrogate) are refused by the analysis and
// take no plan of their shape, in an IN list or elsewhere.
func TestShapeAttackEscapes(t *testing.T) {
	p := testPolicy(t)
	a := `UPDATE inventory SET note = E'x' WHERE sku IN (E'a', E'b')`
	for _, b := range []string{
		`UPDATE inventory SET note = E'x' WHERE sku IN (E'\400', E'b', E'c')`,
		`UPDATE inventory SET note = E'x' WHERE sku IN (E'\xff', E'b', E'c')`,
		`UPDATE inventory SET note = E'x' WHERE sku IN (E'\uD800')`,
		`UPDATE inventory SET note = E'\xff' WHERE sku IN (E'a', E'b')`,
		`UPDATE inventory SET note = E'\000' WHERE sku IN (E'a', E'b')`,
		`UPDATE inventory SET note = E'\xc0\x80' WHERE sku IN (E'a', E'b')`,
		`UPDATE inventory SET note = E'\U00110000' WHERE sku IN (E'a', E'b')`,
	} {
		if d := Analyze(p, b); d.act != ActRefuse {
			t.Errorf("%s: %s, want a refusal", b, outcome(d))
		}
		if checkShape(t, p, a, b) {
			t.Errorf("%s took the plan of %s", b, a)
		}
	}
}

// atSize is a fenced write with an IN list of strings, of exactly n bytes.
func atSize(n int) string {
	head, tail := `UPDATE inventory SET note = 'x' WHERE sku IN ('`, `')`
	body := n - len(head) - len(tail)
	elems := joinN(body/8, "', '", func(int) string { return "abc" }) // 8 bytes an element
	return head + elems + strings.Repeat("z", n-len(head)-len(tail)-len(elems)) + tail
}

// TestShapeAttackAtSize: a list that brings a text to exactly the size limit takes the
// plan of its shape; one byte more is refused, by the analysis and by the engine with
// the plan planted.
func TestShapeAttackAtSize(t *testing.T) {
	for _, n := range []int{MaxStatementBytes, MaxStatementBytes + 1} {
		if got := len(atSize(n)); got != n {
			t.Fatalf("atSize(%d) is %d bytes", n, got)
		}
	}
	p := testPolicy(t)
	if !checkShape(t, p, `UPDATE inventory SET note = 'x' WHERE sku IN ('a', 'b')`, atSize(MaxStatementBytes)) {
		t.Error("a list of exactly the size limit took no plan")
	}
	if d := Analyze(p, atSize(MaxStatementBytes+1)); d.act != ActRefuse {
		t.Errorf("one byte over the size limit: %s", outcome(d))
	}
	// Through the engine, with the plan planted: the text one byte over is refused.
	e := New(p, DefaultCacheEntries, DefaultCacheBytes)
	e.Decide(`UPDATE inventory SET note = 'x' WHERE sku IN ('a', 'b')`)
	if d := e.Decide(atSize(MaxStatementBytes)); d.act != ActRewrite {
		t.Errorf("at the size limit, by the engine: %s", outcome(d))
	}
	if d := e.Decide(atSize(MaxStatementBytes + 1)); d.act != ActRefuse {
		t.Errorf("one byte over the size limit, by the engine: %s", outcome(d))
	}
}
