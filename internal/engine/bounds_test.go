package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestParserBoundsDeepLevels: the shapes that crashed the process under the old
// per-level limits — 150 levels of parentheses, each holding a 900-operator chain,
// within 200 levels and 1000 operators each — in a read, in a write to a protected
// table, and in a DO body. Run in-process: before the measure, each killed it.
func TestParserBoundsDeepLevels(t *testing.T) {
	p := testPolicy(t)
	p.AllowDDL = true // for the function bodies
	deep := strings.Repeat("(1"+strings.Repeat("+1", 899)+"+", 150) + "1" + strings.Repeat(")", 150)
	for name, q := range map[string]string{
		"SELECT":           "SELECT " + deep,
		"UPDATE protected": "UPDATE inventory SET quantity = " + deep + " WHERE sku = $1",
		"DO body":          "DO $$ BEGIN PERFORM " + deep + "; END $$",
		"DO body, nested":  "DO $$ BEGIN " + strings.Repeat("IF true THEN ", 2000) + "NULL;" + strings.Repeat(" END IF;", 2000) + " END $$",
		"function body":    "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN " + deep + "; END $$",
		"SQL function":     "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT " + deep + " $$",
	} {
		d := Analyze(p, q)
		if d.act != ActRefuse {
			t.Errorf("%s: %s, want a refusal", name, outcome(d))
			continue
		}
		if msg := d.refusal.Error(); !strings.Contains(msg, "nested or chained too deeply for the parser") {
			t.Errorf("%s: %s", name, msg)
		}
	}
}

// TestOrdinaryBigStatements: big statements of ordinary shape stay within the bounds.
func TestOrdinaryBigStatements(t *testing.T) {
	p := testPolicy(t)
	rows := make([]string, 5000)
	for i := range rows {
		rows[i] = fmt.Sprintf("($%d, $%d)", 2*i+1, 2*i+2)
	}
	in := make([]string, 1000)
	for i := range in {
		in[i] = fmt.Sprintf("'sku-%d'", i)
	}
	or := make([]string, 300)
	for i := range or {
		or[i] = fmt.Sprintf("(sku = 'sku-%d' AND quantity > %d)", i, i)
	}
	bare := make([]string, 300)
	for i := range bare {
		bare[i] = fmt.Sprintf("inventory.sku = 'sku-%d' AND inventory.quantity <> %d", i, i)
	}
	cols := make([]string, 100)
	for i := range cols {
		cols[i] = fmt.Sprintf(`"i"."quantity" + %d AS "q%d"`, i, i)
	}
	for name, tc := range map[string]struct {
		sql  string
		want Action
	}{
		"5000-row VALUES": {"INSERT INTO inventory (sku, quantity) VALUES " + strings.Join(rows, ", "), ActRewrite},
		"1000-element IN": {"UPDATE inventory SET quantity = 0 WHERE sku IN (" + strings.Join(in, ", ") + ")", ActRewrite},
		"300 ORs":         {"DELETE FROM inventory WHERE " + strings.Join(or, " OR "), ActRewrite},
		"300 bare ORs":    {"UPDATE inventory SET quantity = 0 WHERE " + strings.Join(bare, " OR "), ActRewrite},
		"100 columns":     {"SELECT " + strings.Join(cols, ", ") + ` FROM "inventory" AS "i"`, ActPass},
		"ORM": {`SELECT "inventory".* FROM "inventory" INNER JOIN "skus" ON "skus"."id" = "inventory"."sku" ` +
			`LEFT OUTER JOIN "warehouses" ON "warehouses"."id" = "skus"."warehouse_id" AND "warehouses"."active" = $1 ` +
			`WHERE "inventory"."deleted_at" IS NULL AND ("inventory"."quantity" > $2 OR "skus"."priority" IN ($3, $4, $5)) ` +
			`AND NOT EXISTS (SELECT 1 FROM "holds" WHERE "holds"."sku" = "inventory"."sku" AND "holds"."until" > now()) ` +
			`ORDER BY CASE "inventory"."sku"` + strings.Repeat(` WHEN 'a' THEN 1`, 500) + ` END, "inventory"."sku" LIMIT $6`, ActPass},
		"ORM write": {`UPDATE "inventory" SET "quantity" = "inventory"."quantity" - $1, "updated_at" = now() ` +
			`FROM (SELECT "sku", sum("n") AS "n" FROM "order_lines" WHERE "order_id" = ANY($2::bigint[]) GROUP BY "sku") AS "d" ` +
			`WHERE "inventory"."sku" = "d"."sku" AND "inventory"."quantity" >= "d"."n" RETURNING "inventory"."sku", "inventory"."quantity"`, ActRewrite},
	} {
		if d := Analyze(p, tc.sql); d.act != tc.want {
			t.Errorf("%s: %.200s", name, outcome(d))
		}
	}

	// A PL/pgSQL function goes through Deparse (its header only: the defaults, of any
	// depth, are left out) and the PL/pgSQL parser.
	p.AllowDDL = true
	deflt := "1" + strings.Repeat(" + 1", 400) // 800 messages deep: more than pgtree.DeparseLimit
	body := "$$ DECLARE n int; BEGIN SELECT count(*) INTO n FROM audit WHERE x > a; IF n > 0 THEN RETURN n; END IF; RETURN 0; END $$"
	if d := Analyze(p, "CREATE FUNCTION f(a int DEFAULT "+deflt+") RETURNS int LANGUAGE plpgsql AS "+body); d.act != ActPass {
		t.Errorf("PL/pgSQL function: %s", outcome(d))
	}
	body = "$$ BEGIN UPDATE inventory SET quantity = a; END $$"
	if d := Analyze(p, "CREATE FUNCTION f(a int DEFAULT 1) RETURNS void LANGUAGE plpgsql AS "+body); d.act != ActRefuse ||
		!strings.Contains(d.refusal.Error(), "writes the protected table") {
		t.Errorf("PL/pgSQL function writing inventory: %s", outcome(d))
	}
}

// TestRewriteAtTheLimit: a write whose text measures exactly up to pgtree.Limit is
// fenced, not refused: the fence's additions fit in pgtree.OutputLimit.
func TestRewriteAtTheLimit(t *testing.T) {
	p := testPolicy(t)
	nest := func(n int) string { return strings.Repeat("(", n) + "sku = $1" + strings.Repeat(")", n) }
	chain := func(n int) string { return "quantity = 1" + strings.Repeat(" + 1", n) }
	for name, gen := range map[string]func(n int) string{
		"UPDATE, nested":  func(n int) string { return "UPDATE inventory SET quantity = 1 WHERE " + nest(n) },
		"UPDATE, chained": func(n int) string { return "UPDATE inventory SET quantity = 1 WHERE sku = $1 AND " + chain(n) },
		"DELETE, OR":      func(n int) string { return "DELETE FROM inventory WHERE sku = $2 OR " + nest(n) },
		"WITH and UPDATE": func(n int) string {
			return "WITH d AS (DELETE FROM inventory WHERE " + nest(n) + " RETURNING sku) " +
				"UPDATE inventory SET quantity = 0 WHERE " + chain(n) + " AND sku IN (SELECT sku FROM d)"
		},
		"MERGE": func(n int) string {
			return "MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND " + nest(n) + " THEN UPDATE SET quantity = 0"
		},
		"ON CONFLICT": func(n int) string {
			return "INSERT INTO inventory AS i (sku, quantity) VALUES ($1, 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE " + nest(n)
		},
	} {
		within := func(n int) bool {
			scan, err := pgquery.Scan(gen(n))
			if err != nil {
				t.Fatal(err)
			}
			_, msg := pgtree.Bounds(scan.Tokens)
			return msg == ""
		}
		n, hi := 0, 1 // the largest n within the bounds
		for within(hi) {
			n, hi = hi, 2*hi
		}
		for hi-n > 1 {
			if mid := (n + hi) / 2; within(mid) {
				n = mid
			} else {
				hi = mid
			}
		}
		if d := Analyze(p, gen(n+1)); !strings.Contains(d.refusal.Error(), "too deeply") {
			t.Errorf("%s at n=%d: %s", name, n+1, outcome(d))
		}
		if d := Analyze(p, gen(n)); d.act != ActRewrite {
			t.Errorf("%s at n=%d: %s", name, n, outcome(d))
		}
	}
}
