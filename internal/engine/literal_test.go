package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// literalEpochs are the epochs the literal form is tried with: both sides of the
// 32-bit bound where the scanner's token changes, and int64's ends.
var literalEpochs = []int64{1, 9, 10, math.MaxInt32, math.MaxInt32 + 1, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}

// TestLiteralParsesAsVerified holds Literal's argument against the parser: for every
// fenced statement of the rewrite corpus without parameters of its own, and for the
// statements below, the text with the epoch written in parses to the tree of the
// verified text with each ParamRef $1 replaced by the epoch as an integer constant.
func TestLiteralParsesAsVerified(t *testing.T) {
	p := testPolicy(t)
	texts := []string{
		`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`,
		`UPDATE inventory SET quantity = -1 WHERE sku = '$1'`,
		`DELETE FROM inventory WHERE sku = $$ $1::bigint $$`,
		`DELETE FROM inventory WHERE sku = $$$1::bigint $$ OR sku = '$1::bigint' OR sku = e'\'$1::bigint'/*$1::bigint*/`,
		`UPDATE inventory AS "x$1::bigint" SET quantity = 1 WHERE "x$1::bigint".sku = 'a'`,
		`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2`,
		`UPDATE billing.invoices SET total = 1 /* $1 */ WHERE id = 2 -- $1` + "\n",
		`UPDATE inventory SET quantity = 3 WHERE sku IN (SELECT sku FROM inventory ORDER BY 1 LIMIT 1)`,
		"UPDATE\tinventory\nSET quantity=1", `UPDATE inventory SET quantity = e'\'' WHERE sku = U&'\0061'`,
		`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED THEN UPDATE SET quantity = 1 WHEN NOT MATCHED THEN INSERT (sku) VALUES (s.sku)`,
	}
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		in, _, _ := strings.Cut(string(data), goldenSeparator)
		texts = append(texts, in)
	}
	tried := 0
	for _, q := range texts {
		d := Analyze(p, q)
		if d.act != ActRewrite || d.epochParam != 1 {
			continue
		}
		tried++
		want := treeJSON(t, d.sql)
		for _, epoch := range literalEpochs {
			b := Bound{D: d, Query: q, Send: d.sql, Epoch: epoch, Fenced: true}
			f, ok := b.Literal()
			if !ok && strings.Contains(q, "$1::bigint") {
				continue // the application's own text has the fence's bytes: the epoch stays a parameter
			}
			if !ok {
				t.Errorf("%s: no literal form for epoch %d", d.sql, epoch)
				continue
			}
			if strings.Contains(f, "$1") && !strings.Contains(q, "$1") {
				t.Errorf("epoch %d: the literal text still has $1: %s", epoch, f)
			}
			got := treeJSON(t, f)
			if exp := withConstant(want, epoch); !reflect.DeepEqual(got, exp) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(exp)
				t.Errorf("epoch %d: %s\nparses to %s\nwant       %s", epoch, f, g, w)
			}
		}
	}
	if tried < 20 {
		t.Fatalf("only %d fenced statements without parameters tried", tried)
	}
}

// treeJSON is the parse tree of q without locations.
func treeJSON(t *testing.T, q string) any {
	t.Helper()
	s, err := pgquery.ParseToJSON(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return stripLocations(v)
}

func stripLocations(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != "location" && k != "stmt_len" && k != "stmt_location" {
				out[k] = stripLocations(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripLocations(e)
		}
		return out
	}
	return v
}

// withConstant replaces every ParamRef 1 in tree by the constant the parser builds
// for epoch's digits.
func withConstant(tree any, epoch int64) any {
	switch x := tree.(type) {
	case map[string]any:
		if pr, ok := x["ParamRef"].(map[string]any); ok && len(x) == 1 && pr["number"] == float64(1) {
			if epoch <= math.MaxInt32 {
				return map[string]any{"A_Const": map[string]any{"ival": map[string]any{"ival": float64(epoch)}}}
			}
			return map[string]any{"A_Const": map[string]any{"fval": map[string]any{"fval": strconv.FormatInt(epoch, 10)}}}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = withConstant(e, epoch)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withConstant(e, epoch)
		}
		return out
	}
	return tree
}

// TestLiteralRefused: the literal form is not made where its argument does not hold.
func TestLiteralRefused(t *testing.T) {
	p := testPolicy(t)
	d := Analyze(p, `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`)
	if d.act != ActRewrite {
		t.Fatal(outcome(d))
	}
	for name, b := range map[string]Bound{
		"not fenced":   {D: d, Send: d.sql, Epoch: 5},
		"no epoch":     {D: d, Send: d.sql, Fenced: true},
		"claim":        {D: d, Send: d.sql, Epoch: 5, Fenced: true, Claim: &ClaimCheck{}},
		"negative":     {D: d, Send: d.sql, Epoch: -5, Fenced: true},
		"min int64":    {D: d, Send: d.sql, Epoch: math.MinInt64, Fenced: true},
		"parameter $2": {D: Analyze(p, `UPDATE inventory SET quantity = $1 WHERE sku = 'a'`), Epoch: 5, Fenced: true},
	} {
		if s, ok := b.Literal(); ok {
			t.Errorf("%s: literal form %s", name, s)
		}
	}
	// A text whose $1 is not the fence's as the checks require.
	for _, v := range []string{
		`UPDATE inventory SET writer_epoch = 1$1::bigint`,  // a digit before it
		`UPDATE inventory SET writer_epoch = -$1::bigint`,  // an operator before it
		`UPDATE inventory SET writer_epoch = x.$1::bigint`, // a dot before it
		`UPDATE inventory SET writer_epoch = $1 :: bigint`, // not followed by ::
		`UPDATE inventory SET writer_epoch = $01::bigint`,  // not written $1
		`UPDATE inventory SET writer_epoch = $1::bigint, quantity = $2`,
		`UPDATE inventory SET writer_epoch = 5`, // no $1 at all
	} {
		if parts, ok := literalCheck(v, 7); ok {
			t.Errorf("%s: cut into %q", v, parts)
		}
	}
	// The fence's bytes in the application's text: where they follow a space, "(" or
	// ",", F's scan shows them in a string and the epoch stays a parameter; elsewhere
	// they are not cut, and the literal is made.
	for q, want := range map[string]bool{
		`DELETE FROM inventory WHERE sku = $$ $1::bigint $$`:                                                             false,
		`DELETE FROM inventory WHERE sku = '($1::bigint'`:                                                                false,
		`DELETE FROM inventory WHERE sku = 'a' /* ,$1::bigint */`:                                                        false,
		`DELETE FROM inventory WHERE sku = $$$1::bigint $$ OR sku = '$1::bigint' OR sku = e'\'$1::bigint'/*$1::bigint*/`: true,
		`UPDATE inventory AS "x$1::bigint" SET quantity = 1 WHERE "x$1::bigint".sku = 'a'`:                               true,
	} {
		d := Analyze(p, q)
		b := Bound{D: d, Send: d.sql, Epoch: 5, Fenced: true}
		if s, ok := b.Literal(); ok != want {
			t.Errorf("%s: literal %q, %v; want %v", q, s, ok, want)
		}
	}
	for _, v := range []string{`SELECT $1::bigint`, `SELECT ($1::bigint)`, `SELECT 1,$1::bigint`, "SELECT\n $1::bigint"} {
		if parts, ok := literalCheck(v, 7); !ok || len(parts) != 2 {
			t.Errorf("%s: %q, %v", v, parts, ok)
		}
	}
}

// TestLiteralText: the digits, every epoch token, the rest byte for byte.
func TestLiteralText(t *testing.T) {
	p := testPolicy(t)
	d := Analyze(p, `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`)
	for _, epoch := range literalEpochs {
		b := Bound{D: d, Send: d.sql, Epoch: epoch, Fenced: true}
		got, ok := b.Literal()
		if want := strings.ReplaceAll(d.sql, "$1", strconv.FormatInt(epoch, 10)); !ok || got != want {
			t.Errorf("epoch %d: %q, %v; want %q", epoch, got, ok, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		b := Bound{D: d, Send: d.sql, Epoch: 1 << 40, Fenced: true}
		b.Literal()
	}); n > 1 {
		t.Errorf("%v allocations per literal text after the first, want 1", n)
	}
}

// FuzzLiteral: whatever the application's text, when Literal makes a literal text it
// parses to the decided tree with the epoch as a constant in each ParamRef's place.
//
//	go test -run '^$' -fuzz FuzzLiteral -fuzztime 60s ./internal/engine/
func FuzzLiteral(f *testing.F) {
	for _, q := range []string{
		`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`,
		`DELETE FROM inventory WHERE sku = $$ $1::bigint $$`,
		`INSERT INTO inventory (sku) VALUES ('a') ON CONFLICT (sku) DO UPDATE SET quantity = 2`,
		`UPDATE inventory AS "x$1::bigint" SET quantity = 1 /*,$1::bigint*/ WHERE sku = e'\'$1::bigint'`,
		`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED THEN DELETE`,
	} {
		f.Add(q, int64(1<<40))
	}
	p := testPolicy(f)
	f.Fuzz(func(t *testing.T, q string, epoch int64) {
		d := Analyze(p, q)
		if d.act != ActRewrite || d.epochParam != 1 {
			return
		}
		b := Bound{D: d, Send: d.sql, Epoch: epoch, Fenced: true}
		s, ok := b.Literal()
		if !ok {
			return
		}
		if epoch <= 0 {
			t.Fatalf("literal for epoch %d", epoch)
		}
		got, err := pgquery.ParseToJSON(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		var g any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatal(err)
		}
		if exp := withConstant(treeJSON(t, d.sql), epoch); !reflect.DeepEqual(stripLocations(g), exp) {
			t.Fatalf("%s does not parse as %s with the epoch as a constant", s, d.sql)
		}
	})
}

// checkPlanLiteral: a decision by shape's literal form, taken from its plan
// (planLiteral), is the one a check of its own text gives, or, where that check
// declines (a "$1::bigint" in the text's own string), one that parses to the decided
// tree with the epoch as a constant.
func checkPlanLiteral(t *testing.T, d *Decision) {
	t.Helper()
	if d.act != ActRewrite || d.epochParam != 1 {
		return
	}
	for _, epoch := range []int64{7, 1 << 40} {
		got, ok := (&Bound{D: d, Send: d.sql, Epoch: epoch, Fenced: true}).Literal()
		own := &Decision{act: d.act, sql: d.sql, epochParam: d.epochParam}
		want, wantOK := (&Bound{D: own, Send: own.sql, Epoch: epoch, Fenced: true}).Literal()
		switch {
		case wantOK && (!ok || got != want):
			t.Fatalf("%s: literal form by plan %q (%v), by its own check %q", d.sql, got, ok, want)
		case ok && !wantOK:
			tree, err := pgquery.ParseToJSON(got)
			if err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			var g any
			if err := json.Unmarshal([]byte(tree), &g); err != nil {
				t.Fatal(err)
			}
			if exp := withConstant(treeJSON(t, d.sql), epoch); !reflect.DeepEqual(stripLocations(g), exp) {
				t.Fatalf("%s does not parse as %s with the epoch as a constant", got, d.sql)
			}
		}
	}
}

// TestLiteralByPlan: new texts of a known shape take their literal form from the
// plan, which is checked once per kind: the first derived text is scanned, the next
// are not.
func TestLiteralByPlan(t *testing.T) {
	e := New(testPolicy(t), DefaultCacheEntries, DefaultCacheBytes)
	e.decide(`UPDATE inventory SET quantity = 1, note = 'x' WHERE sku = 'a'`) // analysed: leaves the plan
	var plan *shapePlan
	for i, note := range []string{"y", " $1::bigint", "(,$1::bigint", "z"} {
		d, shaped := e.decide(`UPDATE inventory SET quantity = ` + strconv.Itoa(i+2) + `, note = '` + note + `' WHERE sku = 'b'`)
		if !shaped || d.fromPlan == nil {
			t.Fatalf("%s: not derived with a literal plan", d.sql)
		}
		plan = d.fromPlan
		got, ok := (&Bound{D: d, Send: d.sql, Epoch: 42, Fenced: true}).Literal()
		if !ok || strings.Contains(got, "$1::bigint WHERE") || !strings.Contains(got, "'"+note+"'") ||
			strings.Count(got, "42::bigint") != strings.Count(d.sql, "$1::bigint")-strings.Count(note, "$1::bigint") {
			t.Fatalf("%s: literal form %q, %v", d.sql, got, ok)
		}
		checkPlanLiteral(t, d)
	}
	if plan.literal[0].Load() != 1 || plan.literal[1].Load() != 1 {
		t.Errorf("the plan's checks: %d %d, want both held", plan.literal[0].Load(), plan.literal[1].Load())
	}
	// Once checked, a derived text is not scanned: no allocation beyond the cuts and the text.
	d, _ := e.decide(`UPDATE inventory SET quantity = 9, note = 'w' WHERE sku = 'c'`)
	b := &Bound{D: d, Send: d.sql, Epoch: 42, Fenced: true}
	if n := testing.AllocsPerRun(20, func() { b.Literal() }); n > 2 {
		t.Errorf("%v allocations per literal form by plan, want at most 2", n)
	}
}

// BenchmarkLiteralByShape: a new inlined text of a known shape each iteration, decided
// by the plan and given its literal form, as an ORM that renders its values sends it.
//
//	go test -run '^$' -bench LiteralByShape -count 3 ./internal/engine/
func BenchmarkLiteralByShape(b *testing.B) {
	e := New(testPolicy(b), DefaultCacheEntries, DefaultCacheBytes)
	e.decide(`UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'sku-0'`)
	b.ReportAllocs()
	for i := range b.N {
		d, _ := e.decide(`UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'sku-` + strconv.Itoa(i+1) + `'`)
		if _, ok := (&Bound{D: d, Send: d.sql, Epoch: 1 << 40, Fenced: true}).Literal(); !ok {
			b.Fatal("no literal form")
		}
	}
}

// TestLiteralByPlanDeclines: a plan whose epoch tokens include one inside a name the
// fence copies (a quoted alias) fails its first check, and its texts keep the
// parameter; IN lists of other lengths move the edits, and the literal form follows.
func TestLiteralByPlanDeclines(t *testing.T) {
	e := New(testPolicy(t), DefaultCacheEntries, DefaultCacheBytes)
	e.decide(`UPDATE inventory AS " $1::bigint" SET quantity = 1 WHERE sku = 'a'`)
	for i := range 3 {
		d, shaped := e.decide(`UPDATE inventory AS " $1::bigint" SET quantity = ` + strconv.Itoa(i+2) + ` WHERE sku = 'b'`)
		if !shaped || d.act != ActRewrite {
			t.Fatalf("%s: not derived", d.sql)
		}
		if s, ok := (&Bound{D: d, Send: d.sql, Epoch: 42, Fenced: true}).Literal(); ok {
			t.Fatalf("%s: literal form %s", d.sql, s)
		}
		if d.fromPlan == nil || d.fromPlan.literal[0].Load() != 2 {
			t.Fatalf("%s: the plan's check %d, want failed", d.sql, d.fromPlan.literal[0].Load())
		}
	}
	e.decide(`UPDATE inventory SET quantity = 1 WHERE sku IN ('a', 'b') AND note = 'x'`)
	for n := 1; n < 6; n++ {
		list := strings.Repeat("'v', ", n) + "'w'"
		d, shaped := e.decide(`UPDATE inventory SET quantity = 1 WHERE sku IN (` + list + `) AND note = 'y'`)
		if !shaped {
			t.Fatalf("%s: not derived", d.sql)
		}
		if _, ok := (&Bound{D: d, Send: d.sql, Epoch: 42, Fenced: true}).Literal(); !ok {
			t.Fatalf("%s: no literal form", d.sql)
		}
		checkPlanLiteral(t, d)
	}
}
