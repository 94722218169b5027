package pgtree

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// FuzzParserBounds builds deep and wide statements and PL/pgSQL bodies from the fuzz
// input and checks the bounds against pg_query itself:
//
//   - whatever the measure admits parses without crashing the process: pg_query is
//     called here, on the fuzzing goroutine's own thread and stack, not the big stack
//     sqlfence uses, so a crash is a finding;
//   - the measure's claim holds: the parse tree is at most 2·M messages deep (for a
//     PL/pgSQL body, its JSON dump at most 2·M levels);
//   - the verdict is monotone: a prefix of the text never measures more than the
//     text, and wrapping a statement (a subquery of it, EXPLAIN) never measures less;
//   - Parse and ParsePlpgsql refuse what Measure refuses.
//
// The first input byte chooses the mode: 0 and 1 take the rest as SQL or as a
// PL/pgSQL body, as it is (the seeds include every shape of shapes_test.go); anything
// else runs the generator (fuzzGen), whose repetition counts go up to thousands, so
// that small inputs make deep and wide structures. The seed corpus runs with every
// `go test`; the long run:
//
//	go test -run '^$' -fuzz FuzzParserBounds -fuzztime 10m ./internal/pgtree
func FuzzParserBounds(f *testing.F) {
	for _, s := range shapes {
		for _, n := range []int{2, 25} {
			mode := byte(0)
			if s.plpgsql {
				mode = 1
			}
			f.Add(append([]byte{mode}, s.gen(n)...))
		}
	}
	for _, q := range []string{ormActiveRecord, ormHibernate, ormDjango, ormSQLAlchemy, ormReporting} {
		f.Add(append([]byte{0}, q...))
	}
	f.Add(append([]byte{1}, plpgsqlOrdinary...))
	for i := range 32 {
		// Generator seeds: every construct at the top, with counts small and large.
		f.Add([]byte{byte(2 + i%2), byte(i), byte(i * 7), byte(255 - i), byte(i * 13), 200, byte(i), 3, 250, byte(i * 31), 1, 9})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		var text string
		plpgsql := false
		switch data[0] {
		case 0:
			text = string(data[1:])
		case 1:
			text, plpgsql = string(data[1:]), true
		default:
			g := &fuzzGen{data: data[1:]}
			if data[0]%2 == 0 {
				text = g.statements()
			} else {
				text, plpgsql = g.body(), true
			}
		}
		checkBounds(t, text, plpgsql, data)
	})
}

func checkBounds(t *testing.T, text string, plpgsql bool, data []byte) {
	if len(text) > 1<<20 {
		return
	}
	scan, err := pgquery.Scan(text)
	if err != nil {
		return
	}
	limit := Limit
	if plpgsql {
		limit = BodyLimit
	}
	m, berr := Measure(text, scan.Tokens, plpgsql, limit)
	full, _ := Measure(text, scan.Tokens, plpgsql, 1<<62)
	if berr == nil && full != m || berr != nil && full <= limit {
		t.Fatalf("Measure with and without the limit disagree: %d (%v), %d\n%.300s", m, berr, full, text)
	}

	// Monotone: a prefix measures at most the whole; a wrapped statement at least.
	if len(scan.Tokens) > 1 {
		k := int(data[len(data)/2]) * len(scan.Tokens) / 256
		prefix, _ := Measure(text, scan.Tokens[:k], plpgsql, 1<<62)
		if prefix > full {
			t.Fatalf("the first %d tokens measure %d, the whole %d\n%.300s", k, prefix, full, text)
		}
	}
	if !plpgsql && strings.HasPrefix(text, "SELECT ") && !strings.Contains(text, ";") && balanced(scan.Tokens) {
		for _, w := range []string{"SELECT (" + text + ")", "EXPLAIN " + text, "SELECT 1 FROM (" + text + ") s"} {
			if ws, err := pgquery.Scan(w); err == nil {
				if mw, _ := Measure(w, ws.Tokens, false, 1<<62); mw < full {
					t.Fatalf("wrapped, %d; alone, %d\n%.300s", mw, full, w)
				}
			}
		}
	}

	if berr != nil {
		// Refused: by the API as well.
		var err error
		if plpgsql {
			_, err = ParsePlpgsql(plpgsqlFunction(text), text)
		} else {
			_, err = Parse(text, Limit)
		}
		if !errors.As(err, new(*BoundsError)) {
			t.Fatalf("Measure refuses, the parse functions: %v\n%.300s", err, text)
		}
		return
	}
	// Admitted: parsed here, on this thread and its stack (a crash is a finding).
	if plpgsql {
		out, err := pgquery.ParsePlPgSqlToJSON(plpgsqlFunction(text))
		if err == nil {
			if d := jsonDepth(out); d > 2*m {
				t.Fatalf("PL/pgSQL dump %d deep, measure %d\n%.300s", d, m, text)
			}
		}
		return
	}
	tree, err := pgquery.Parse(text)
	if err != nil {
		return
	}
	if d := Depth(tree.ProtoReflect()); d > 2*m {
		t.Fatalf("tree %d deep, measure %d\n%.300s", d, m, text)
	}
}

// balanced reports whether the parentheses and brackets in tokens pair up, as they
// do in any text the parser accepts. (In one that does not, a wrapper's closing
// parenthesis can pair with an opener of the text and measure less: the parser
// stops at the syntax error, before anything recurses.)
func balanced(tokens []*pg.ScanToken) bool {
	var open []pg.Token
	for _, t := range tokens {
		switch t.Token {
		case pg.Token_ASCII_40, pg.Token_ASCII_91:
			open = append(open, t.Token)
		case pg.Token_ASCII_41, pg.Token_ASCII_93:
			want := pg.Token_ASCII_40
			if t.Token == pg.Token_ASCII_93 {
				want = pg.Token_ASCII_91
			}
			if len(open) == 0 || open[len(open)-1] != want {
				return false
			}
			open = open[:len(open)-1]
		}
	}
	return len(open) == 0
}

// fuzzGen turns fuzz bytes into SQL and PL/pgSQL: each choice reads a byte (0 once the
// input runs out). Expressions and statements are built to be valid (mostly: the
// fuzzer may mutate into syntax errors, which parse to nothing and only exercise the
// measure), deep through nesting and chains, wide through lists.
type fuzzGen struct {
	data []byte
	pos  int
	size int // bytes produced so far: past maxGen, only leaves
}

const maxGen = 64 << 10

func (g *fuzzGen) byte() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

// count is a repetition count: mostly small, up to 4096.
func (g *fuzzGen) count() int {
	b := g.byte()
	if b < 192 {
		return int(b%6) + 1
	}
	return 1 << (b % 13)
}

func (g *fuzzGen) pick(options ...string) string { return options[int(g.byte())%len(options)] }

func (g *fuzzGen) full() bool { return g.size > maxGen }

// repeat builds n copies of f's results, joined by sep.
func (g *fuzzGen) repeat(n int, sep string, f func() string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		s := f()
		b.WriteString(s)
		g.size += len(s) + len(sep)
		if g.full() {
			break
		}
	}
	return b.String()
}

// nestIn wraps inner in n levels of open … close (the text between repeated).
func (g *fuzzGen) nestIn(n int, open, close string, inner func() string) string {
	if g.size+n*(len(open)+len(close)) > maxGen {
		n = max(1, (maxGen-g.size)/max(1, len(open)+len(close)))
	}
	g.size += n * (len(open) + len(close))
	return strings.Repeat(open, n) + inner() + strings.Repeat(close, n)
}

func (g *fuzzGen) leaf() string {
	return g.pick("x", "1", "t.c", "'s'", "$1", "NULL", "true", "2.5", `"Q"`, "now()", "a[1]", "(x).f")
}

// primary is an expression that composes with any operator: a leaf or something
// bracketed.
func (g *fuzzGen) primary(d int) string {
	if d > 12 || g.full() {
		return g.leaf()
	}
	switch g.byte() % 16 {
	case 0, 1, 2:
		return g.leaf()
	case 3:
		return "(" + g.expr(d+1) + ")"
	case 4:
		return "(" + g.query(d+1) + ")"
	case 5:
		return "CASE" + g.repeat(g.count(), "", func() string {
			return " WHEN " + g.expr(d+1) + " THEN " + g.expr(d+1)
		}) + " ELSE " + g.expr(d+1) + " END"
	case 6:
		return g.pick("f", "coalesce", "s.g", "greatest") + "(" + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) }) + ")"
	case 7:
		return "ARRAY[" + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) }) + "]"
	case 8:
		return "ROW(" + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) }) + ")"
	case 9:
		return "EXISTS (" + g.query(d+1) + ")"
	case 10:
		return "(" + g.expr(d+1) + ")" + g.repeat(g.count(), "", func() string { return g.pick("[1]", ".f", "[1:2]", ".*") })
	case 11:
		return "CAST(" + g.expr(d+1) + " AS " + g.pick("int", "text[]", "numeric(10, 2)") + ")"
	case 12:
		// Deep at once: n levels of one wrapper.
		w := [][2]string{{"(", ")"}, {"f(", ")"}, {"(SELECT ", ")"}, {"ARRAY[", "]"}, {"CASE WHEN true THEN ", " END"},
			{"NOT (", ")"}, {"x IN (1, ", ")"}, {"(", ")[1]"}, {"coalesce(1, ", ")"}, {"(SELECT 1, x OR y AND ", ")[1]"},
			{"a[x OR ", "]"}, {"EXISTS (SELECT ", ")"}, {"(1, ", ")"}, {"f(a => ", ")"}, {"x BETWEEN 1 AND (", ")"},
			{"(SELECT * FROM (SELECT ", ") s)"}}[int(g.byte())%16]
		return g.nestIn(g.count(), w[0], w[1], func() string { return g.expr(d + 1) })
	case 13:
		// The problem shape: levels each holding a chain.
		chain := g.count()
		return g.nestIn(g.count(), "("+strings.Repeat("1+", chain), ")", func() string { return g.primary(d + 1) })
	case 14:
		return g.primary(d+1) + g.repeat(g.count(), "", func() string {
			return g.pick("::int", " IS NULL", " IS NOT NULL", ` COLLATE "C"`, " AT TIME ZONE 'UTC'", " IS JSON", "::text[]")
		})
	default:
		return g.pick("NOT ", "- ", "+ ", "@ ", "~ ") + g.primary(d+1)
	}
}

// expr is any expression: a primary, or operators over primaries.
func (g *fuzzGen) expr(d int) string {
	if d > 12 || g.full() {
		return g.leaf()
	}
	switch g.byte() % 8 {
	case 0, 1:
		return g.primary(d)
	case 2:
		// A chain of associative operators, mixed.
		return g.primary(d+1) + g.repeat(g.count(), "", func() string {
			return g.pick(" + ", " - ", " * ", " || ", " AND ", " OR ", " / ", " # ", " ^ ") + g.primary(d+1)
		})
	case 3:
		return g.primary(d+1) + g.pick(" = ", " < ", " >= ", " <> ", " IS DISTINCT FROM ", " LIKE ", " ~ ") + g.primary(d+1)
	case 4:
		return g.primary(d+1) + g.pick(" IN (", " NOT IN (") + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) }) + ")"
	case 5:
		return g.primary(d+1) + g.pick(" BETWEEN ", " NOT BETWEEN SYMMETRIC ") + g.primary(d+1) + " AND " + g.primary(d+1)
	case 6:
		// A boolean of comparisons: wide, flat.
		return g.repeat(g.count(), g.pick(" AND ", " OR "), func() string { return g.primary(d+1) + " = " + g.primary(d+1) })
	default:
		return strings.Repeat(g.pick("NOT ", "- "), g.count()) + g.primary(d+1)
	}
}

func (g *fuzzGen) fromItem(d int) string {
	switch g.byte() % 5 {
	case 0:
		return "(" + g.query(d+1) + ") s"
	case 1:
		return g.pick("f", "generate_series") + "(" + g.expr(d+1) + ")"
	case 2:
		return "LATERAL (" + g.query(d+1) + ") l"
	default:
		return g.pick("t", "inventory", "s.u AS v")
	}
}

func (g *fuzzGen) from(d int) string {
	return g.repeat(g.count(), ", ", func() string {
		return g.fromItem(d) + g.repeat(g.count()-1, "", func() string {
			switch g.byte() % 4 {
			case 0:
				return " CROSS JOIN " + g.fromItem(d)
			case 1:
				return " NATURAL JOIN " + g.fromItem(d)
			default:
				return g.pick(" JOIN ", " LEFT JOIN ", " FULL JOIN ") + g.fromItem(d) + " ON " + g.expr(d+1)
			}
		})
	})
}

// query is a SELECT, possibly with set operations.
func (g *fuzzGen) query(d int) string {
	if d > 12 || g.full() {
		return "SELECT 1"
	}
	one := func() string {
		q := "SELECT " + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) })
		if g.byte()%2 == 0 {
			q += " FROM " + g.from(d)
		}
		if g.byte()%2 == 0 {
			q += " WHERE " + g.expr(d+1)
		}
		if g.byte()%4 == 0 {
			q += " GROUP BY " + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) })
		}
		return q
	}
	switch g.byte() % 6 {
	case 0:
		return one() + g.repeat(g.count(), "", func() string {
			return g.pick(" UNION ", " UNION ALL ", " INTERSECT ", " EXCEPT ") + one()
		})
	case 1:
		return "WITH " + g.repeat(g.count(), ", ", func() string { return "w AS (" + g.query(d+1) + ")" }) + " " + one()
	case 2:
		return "VALUES " + g.repeat(g.count(), ", ", func() string {
			return "(" + g.repeat(g.count(), ", ", func() string { return g.expr(d + 1) }) + ")"
		})
	default:
		return one()
	}
}

func (g *fuzzGen) statement(d int) string {
	switch g.byte() % 6 {
	case 0:
		return "UPDATE inventory SET " + g.repeat(g.count(), ", ", func() string { return "c = " + g.expr(d+1) }) + " WHERE " + g.expr(d+1)
	case 1:
		return "INSERT INTO inventory (a, b) " + g.query(d+1)
	case 2:
		return "DELETE FROM inventory WHERE " + g.expr(d+1)
	case 3:
		return "MERGE INTO inventory USING t ON " + g.expr(d+1) + g.repeat(g.count(), "", func() string {
			return " WHEN MATCHED AND " + g.expr(d+1) + " THEN UPDATE SET c = " + g.expr(d+1)
		})
	default:
		return g.query(d)
	}
}

func (g *fuzzGen) statements() string {
	return g.repeat(int(g.byte()%3)+1, "; ", func() string { return g.statement(0) })
}

// body is a PL/pgSQL block.
func (g *fuzzGen) body() string {
	return "DECLARE x int; i int; BEGIN " + g.pstatements(0) + " END"
}

func (g *fuzzGen) pstatements(d int) string {
	return g.repeat(g.count(), " ", func() string { return g.pstatement(d) })
}

func (g *fuzzGen) pstatement(d int) string {
	if d > 12 || g.full() {
		return "NULL;"
	}
	cond := func() string { return g.expr(d + 1) }
	inner := func() string { return g.pstatements(d + 1) }
	switch g.byte() % 12 {
	case 0:
		return "IF " + cond() + " THEN " + inner() + g.repeat(g.count()-1, "", func() string {
			return " ELSIF " + cond() + " THEN " + inner()
		}) + " ELSE " + inner() + " END IF;"
	case 1:
		return "LOOP " + inner() + " EXIT; END LOOP;"
	case 2:
		return "WHILE " + cond() + " LOOP " + inner() + " END LOOP;"
	case 3:
		return "FOR i IN 1.." + strconv.Itoa(int(g.byte())) + " LOOP " + inner() + " END LOOP;"
	case 4:
		return "BEGIN " + inner() + " EXCEPTION WHEN others THEN " + inner() + " END;"
	case 5:
		return "CASE" + g.repeat(g.count(), "", func() string { return " WHEN " + cond() + " THEN " + inner() }) + " ELSE NULL; END CASE;"
	case 6:
		// Deep at once.
		w := [][2]string{{"IF true THEN ", " END IF;"}, {"LOOP ", " END LOOP;"}, {"BEGIN ", " END;"},
			{"CASE WHEN true THEN ", " END CASE;"}, {"WHILE true LOOP ", " END LOOP;"}}[int(g.byte())%5]
		return g.nestIn(g.count(), w[0], w[1], func() string { return g.pstatement(d + 1) })
	case 7:
		return "x := " + g.expr(d+1) + ";"
	case 8:
		return "PERFORM " + g.expr(d+1) + ";"
	case 9:
		return g.pick("DROP TABLE IF EXISTS t;", "IF EXISTS (SELECT 1) THEN NULL; END IF;", "RAISE NOTICE '%', 1;", "RETURN;")
	case 10:
		return g.statement(d+1) + ";"
	default:
		return "NULL;"
	}
}
