package pgtree

import (
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestWasmParserStaysClean: the deepest text of every shape the bounds admit,
// parsed through pgtree's bounded functions, leaves the parser as it found it. The
// WebAssembly build (CGO_ENABLED=0) has no guard below its stack: a text that
// overruns it gets no error but corrupts the instance, and later, ordinary texts
// then fail or parse wrong. So after each shape, two ordinary texts must still parse
// to what they parsed to before. (Under cgo an overrun is a crash, which the stack
// tests look for.)
func TestWasmParserStaysClean(t *testing.T) {
	canary := "SELECT a, b FROM t WHERE x = 1 AND y IN (1, 2, 3) ORDER BY a"
	pcanary := plpgsqlFunction("BEGIN IF x THEN NULL; END IF; END")
	want, err := pgquery.ParseToJSON(canary)
	if err != nil {
		t.Fatal(err)
	}
	pwant, err := pgquery.ParsePlPgSqlToJSON(pcanary)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		n := largestWithin(t, s, limitOf(s))
		text := s.gen(n)
		var err error
		if s.plpgsql {
			_, err = ParsePlpgsql(plpgsqlFunction(text), text)
		} else {
			_, err = Parse(text, Limit)
		}
		if err != nil {
			t.Errorf("%s(%d), the largest the bound admits: %v", s.name, n, err)
		}
		got, err := pgquery.ParseToJSON(canary)
		pgot, perr := pgquery.ParsePlPgSqlToJSON(pcanary)
		if got != want || err != nil || pgot != pwant || perr != nil {
			t.Fatalf("%s build: after %s(%d) (measure %d) ordinary texts parse differently (%v, %v): the parser's memory is corrupt",
				pgquery.Build, s.name, n, measureOf(t, s, n), err, perr)
		}
	}
}
