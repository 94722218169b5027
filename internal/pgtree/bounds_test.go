package pgtree

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

func measure(t testing.TB, text string, plpgsql bool) int {
	t.Helper()
	scan, err := pgquery.Scan(text)
	if err != nil {
		t.Fatalf("scan %.80s: %v", text, err)
	}
	m, _ := Measure(text, scan.Tokens, plpgsql, 1<<62)
	return m
}

// treeDepth parses a shape's text within the bounds and returns the depth the
// measure bounds: protobuf messages, or the JSON nesting of a PL/pgSQL dump.
func treeDepth(s shape, text string) (int, error) {
	if s.plpgsql {
		out, err := ParsePlpgsql(plpgsqlFunction(text), text)
		if err != nil {
			return 0, err
		}
		return jsonDepth(out), nil
	}
	tree, err := Parse(text, Limit)
	if err != nil {
		return 0, err
	}
	return Depth(tree.ProtoReflect()), nil
}

// limitOf is the bound a shape's texts are held to.
func limitOf(s shape) int {
	if s.plpgsql {
		return BodyLimit
	}
	return Limit
}

// TestMeasureBoundsShapes checks the measure's claim, depth ≤ 2·M, on every shape up
// to the largest size the limit admits, and that every larger size is refused.
func TestMeasureBoundsShapes(t *testing.T) {
	for _, s := range shapes {
		largest := largestWithin(t, s, limitOf(s))
		for n := 1; n <= largest; n = max(n+1, n*5/4) {
			text := s.gen(n)
			m := measure(t, text, s.plpgsql)
			d, err := treeDepth(s, text)
			if err != nil {
				t.Errorf("%s(%d), measure %d: %v", s.name, n, m, err)
				continue
			}
			if d > 2*m {
				t.Errorf("%s(%d): depth %d > 2·measure %d", s.name, n, d, m)
			}
		}
		if largest == flatSize {
			continue // wide, not deep: the measure does not grow
		}
		for _, n := range []int{largest + 1, 2*largest + 1, 10*largest + 10} {
			if _, err := treeDepth(s, s.gen(n)); !errors.As(err, new(*BoundsError)) {
				t.Errorf("%s(%d), past the largest within the limit (%d): %v, want a BoundsError", s.name, n, largest, err)
			}
		}
	}
}

// TestMeasureStatementsLevels: semicolons and commas end what they end, and only that.
func TestMeasureStatementsLevels(t *testing.T) {
	chain := rep("1+", 100) + "1"
	for _, tc := range []struct {
		name     string
		a, b     string // measure(a) == measure(b)
		plpgsql  bool
		lessThan bool // measure(a) < measure(b) instead
	}{
		{"statements are independent", "SELECT " + chain + "; SELECT " + chain, "SELECT " + chain, false, false},
		{"list items are independent", "SELECT " + chain + ", " + chain, "SELECT " + chain, false, false},
		{"set operations add up across commas", "SELECT 1, 1 UNION SELECT 1, 1", "SELECT 1 UNION SELECT 1 UNION SELECT 1", false, true},
		{"a chain after a subquery adds to it", "SELECT (SELECT " + chain + ")", "SELECT (SELECT " + chain + ") + " + chain, false, true},
		{"a chain before a subquery adds to it", "SELECT (SELECT " + chain + ")", "SELECT " + chain + " + (SELECT " + chain + ")", false, true},
		{"AND and OR chains flatten", "SELECT a = 1 AND b = 2 OR true", "SELECT " + rep("a = 1 AND b = 2 OR ", 300) + "true", false, false},
		{"BETWEEN's AND does not end the segment", "SELECT x + 1 BETWEEN 1 AND 2", "SELECT x + 1 BETWEEN 1 AND 2 + 1", false, true},
		{"WHEN arms are siblings", "SELECT CASE x WHEN 1 THEN 1 END", "SELECT CASE x" + rep(" WHEN 1 THEN 1", 1000) + " END", false, false},
		{"SQL IF EXISTS opens nothing", "BEGIN DROP TABLE IF EXISTS t; END", "BEGIN " + rep("DROP TABLE IF EXISTS t; ", 1000) + "END", true, false},
		{"END IF closes only IF", "BEGIN IF x THEN NULL; END IF; END", "BEGIN IF x THEN NULL; END IF; NULL; END", true, false},
		{"END closes no parenthesis", "SELECT (((1 + " + chain + ")))", "SELECT (((1 END END END + " + chain + ")))", false, false},
	} {
		a, b := measure(t, tc.a, tc.plpgsql), measure(t, tc.b, tc.plpgsql)
		if tc.lessThan && a >= b || !tc.lessThan && a != b {
			t.Errorf("%s: %d, %d", tc.name, a, b)
		}
	}
}

// Ordinary big statements stay well within the limit.
func TestMeasureOrdinary(t *testing.T) {
	cols := make([]string, 100)
	for i := range cols {
		cols[i] = fmt.Sprintf(`"t"."column_%d" AS "c%d"`, i, i)
	}
	rows := make([]string, 5000)
	for i := range rows {
		rows[i] = fmt.Sprintf("($%d, $%d, 'x', now(), NULL)", 2*i+1, 2*i+2)
	}
	in := make([]string, 1000)
	for i := range in {
		in[i] = strconv.Itoa(i)
	}
	or := make([]string, 300)
	orAnd := make([]string, 300)
	for i := range or {
		or[i] = fmt.Sprintf(`"orders"."id" = $%d`, i+1)
		orAnd[i] = fmt.Sprintf(`"orders"."customer_id" = $%d AND "orders"."status" <> 'cancelled'`, i+1)
	}
	for name, sql := range map[string]string{
		"5000-row VALUES":  "INSERT INTO inventory (sku, quantity, note, updated_at, extra) VALUES " + strings.Join(rows, ", "),
		"1000-element IN":  "SELECT * FROM inventory WHERE sku IN (" + strings.Join(in, ", ") + ")",
		"300 ORs":          `SELECT * FROM "orders" WHERE ` + strings.Join(or, " OR "),
		"300 ORs of ANDs":  `SELECT * FROM "orders" WHERE ` + strings.Join(orAnd, " OR "),
		"100 columns":      "SELECT " + strings.Join(cols, ", ") + ` FROM "t"`,
		"ActiveRecord":     ormActiveRecord,
		"Hibernate":        ormHibernate,
		"Django":           ormDjango,
		"SQLAlchemy":       ormSQLAlchemy,
		"jOOQ-style ORDER": "SELECT * FROM t ORDER BY CASE id" + rep(" WHEN 17 THEN 1", 2000) + " END",
		"reporting":        ormReporting,
	} {
		m := measure(t, sql, false)
		t.Logf("%-18s measure %d", name, m)
		if m > Limit/3 {
			t.Errorf("%s: measure %d, more than a third of the limit", name, m)
		}
		if _, err := Parse(sql, Limit); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if m := measure(t, plpgsqlOrdinary, true); m > Limit/3 {
		t.Errorf("PL/pgSQL body: measure %d", m)
	} else if _, err := ParsePlpgsql(plpgsqlFunction(plpgsqlOrdinary), plpgsqlOrdinary); err != nil {
		t.Errorf("PL/pgSQL body: %v", err)
	}
}

const ormActiveRecord = `SELECT "orders".* FROM "orders" INNER JOIN "customers" ON "customers"."id" = "orders"."customer_id" LEFT OUTER JOIN "addresses" ON "addresses"."customer_id" = "customers"."id" AND "addresses"."kind" = $1 WHERE "orders"."deleted_at" IS NULL AND "orders"."tenant_id" = $2 AND ("orders"."status" IN ('new', 'paid', 'shipped') OR "orders"."priority" > 5) AND "customers"."email" ILIKE $3 AND NOT EXISTS (SELECT 1 FROM "refunds" WHERE "refunds"."order_id" = "orders"."id" AND "refunds"."state" <> 'rejected') ORDER BY "orders"."created_at" DESC, "orders"."id" DESC LIMIT $4 OFFSET $5`

const ormHibernate = `select order0_.id as id1_3_0_, customer1_.id as id1_1_1_, order0_.created_at as created_2_3_0_, order0_.customer_id as customer5_3_0_, order0_.status as status3_3_0_, order0_.total as total4_3_0_, customer1_.email as email2_1_1_, customer1_.name as name3_1_1_, (select count(item2_.id) from order_item item2_ where item2_.order_id=order0_.id) as formula0_0_, case when order0_.total>1000 then 'big' when order0_.total>100 then 'medium' else 'small' end as formula1_0_ from orders order0_ inner join customers customer1_ on order0_.customer_id=customer1_.id left outer join (select a.customer_id, max(a.updated_at) as last from addresses a group by a.customer_id) addr2_ on addr2_.customer_id=customer1_.id where (order0_.status in ($1 , $2 , $3)) and (order0_.created_at between $4 and $5) and (lower(customer1_.email) like $6 escape '\') and coalesce(order0_.discount, 0)<order0_.total*0.5 order by order0_.created_at desc, order0_.id asc limit $7 offset $8`

const ormDjango = `SELECT "shop_order"."id", "shop_order"."customer_id", "shop_order"."total", COUNT("shop_item"."id") AS "n_items", SUM(("shop_item"."price" * "shop_item"."quantity")) AS "gross", COALESCE(SUM("shop_refund"."amount") FILTER (WHERE "shop_refund"."state" = 'done'), 0) AS "refunded" FROM "shop_order" LEFT OUTER JOIN "shop_item" ON ("shop_order"."id" = "shop_item"."order_id") LEFT OUTER JOIN "shop_refund" ON ("shop_order"."id" = "shop_refund"."order_id") INNER JOIN "shop_customer" ON ("shop_order"."customer_id" = "shop_customer"."id") WHERE ("shop_order"."created" >= $1 AND "shop_order"."created" < $2 AND NOT ("shop_order"."id" IN (SELECT U0."order_id" FROM "shop_blocked" U0 WHERE (U0."reason" = $3 OR U0."reason" IS NULL))) AND "shop_customer"."country" IN ($4, $5, $6, $7)) GROUP BY "shop_order"."id", "shop_order"."customer_id", "shop_order"."total" HAVING COUNT("shop_item"."id") > $8 ORDER BY "gross" DESC NULLS LAST`

const ormSQLAlchemy = `WITH recent AS (SELECT orders.id AS id, orders.customer_id AS customer_id, row_number() OVER (PARTITION BY orders.customer_id ORDER BY orders.created_at DESC) AS rn FROM orders WHERE orders.created_at > now() - CAST($1 AS INTERVAL)) SELECT customers.id, customers.name, anon_1.total FROM customers JOIN (SELECT recent.customer_id AS customer_id, sum(order_lines.amount) AS total FROM recent JOIN order_lines ON order_lines.order_id = recent.id WHERE recent.rn <= $2 GROUP BY recent.customer_id) AS anon_1 ON anon_1.customer_id = customers.id WHERE customers.active IS true AND (customers.region = $3 OR customers.region = $4) ORDER BY anon_1.total DESC`

const ormReporting = `SELECT date_trunc('month', o.created_at) AS month, sum(CASE WHEN o.status = 'paid' THEN o.total ELSE 0 END) AS paid, sum(CASE WHEN o.status = 'refunded' THEN -o.total ELSE 0 END) AS refunded, round(100.0 * sum(CASE WHEN o.status = 'paid' THEN 1 ELSE 0 END) / nullif(count(*), 0), 2) AS paid_pct, jsonb_build_object('top', (SELECT jsonb_agg(jsonb_build_object('sku', i.sku, 'n', i.n)) FROM (SELECT sku, count(*) AS n FROM order_items oi WHERE oi.order_id = ANY(array_agg(o.id)) GROUP BY sku ORDER BY n DESC LIMIT 5) i)) AS detail FROM orders o WHERE o.created_at >= $1 AND o.created_at < $1 + interval '1 year' GROUP BY 1 ORDER BY 1`

const plpgsqlOrdinary = `
DECLARE
	r record;
	n int := 0;
BEGIN
	FOR r IN SELECT id, quantity FROM inventory WHERE quantity < 0 LOOP
		IF r.quantity < -100 THEN
			RAISE WARNING 'very negative: %', r.id;
		ELSIF r.quantity < -10 THEN
			BEGIN
				INSERT INTO audit (sku, note) VALUES (r.id, 'negative');
			EXCEPTION WHEN unique_violation THEN
				NULL;
			END;
		ELSE
			n := n + 1;
		END IF;
		WHILE n > 10 LOOP
			n := n - 1;
			EXIT WHEN n % 7 = 0 AND n > 3;
		END LOOP;
		CASE WHEN n > 5 THEN n := 0; ELSE NULL; END CASE;
	END LOOP;
	DROP TABLE IF EXISTS scratch;
	IF EXISTS (SELECT 1 FROM audit) THEN PERFORM pg_notify('audit', n::text); END IF;
END`

// The inputs that crashed the process before the measure: per-level limits multiplied.
func TestBoundsProblemShapes(t *testing.T) {
	level := "(1" + rep("+1", 899) + "+" // 900 operators
	for name, tc := range map[string]struct {
		text    string
		plpgsql bool
	}{
		"SELECT":   {"SELECT " + nest(level, "1", ")", 150), false},
		"UPDATE":   {"UPDATE inventory SET quantity = " + nest(level, "1", ")", 150) + " WHERE sku = $1", false},
		"DO body":  {"BEGIN PERFORM " + nest(level, "1", ")", 150) + "; END", true},
		"IF depth": {"BEGIN " + nest("IF x THEN ", "NULL;", " END IF;", 5000) + " END", true},
	} {
		scan, err := pgquery.Scan(tc.text)
		if err != nil {
			t.Fatal(err)
		}
		m, berr := Measure(tc.text, scan.Tokens, tc.plpgsql, Limit)
		if berr == nil {
			t.Errorf("%s: measure %d within the limit", name, m)
			continue
		}
		if !strings.Contains(berr.Error(), "too deeply") {
			t.Errorf("%s: %v", name, berr)
		}
	}
}

// TestParserCallsBounded: pg_query's recursing entry points are called in parse.go
// only, where each is preceded by the bound; everything else calls those. The
// parser's two builds (pg_query_go, go-pgquery) are called only by the package that
// chooses between them, internal/pgtree/pgquery, which parse.go calls.
func TestParserCallsBounded(t *testing.T) {
	recursing := map[string]bool{"Parse": true, "ParseToJSON": true, "ParseToProtobuf": true,
		"ParsePlPgSqlToJSON": true, "Deparse": true, "DeparseFromProtobuf": true, "Fingerprint": true,
		"FingerprintToUInt64": true, "FingerprintToHexStr": true, "Normalize": true, "NormalizeUtility": true,
		"SplitWithParser": true, "Summary": true, "SummaryToProtobuf": true, "IsUtilityStmt": true}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkgs := map[string]bool{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			var name string
			switch {
			case strings.HasPrefix(p, "github.com/pganalyze/pg_query_go/"), strings.HasPrefix(p, "github.com/wasilibs/go-pgquery"):
				name = "pg_query"
				if strings.HasSuffix(p, "/parser") {
					name = "parser"
				}
			case p == "github.com/sqlfence/sqlfence/internal/pgtree/pgquery":
				name = "pgquery"
			default:
				continue
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			pkgs[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && pkgs[x.Name] && recursing[sel.Sel.Name] &&
				filepath.ToSlash(path) != "../../internal/pgtree/parse.go" &&
				filepath.ToSlash(filepath.Dir(path)) != "../../internal/pgtree/pgquery" {
				t.Errorf("%s: %s.%s outside internal/pgtree/parse.go: call pgtree's bounded version", path, x.Name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMeasureOdd: text the parser refuses still measures, without panicking.
func TestMeasureOdd(t *testing.T) {
	for _, text := range []string{"IF x THEN", "END IF", "END LOOP", "loop", ")", "]", "END", "BEGIN", "(((", "CASE", "a BETWEEN", ""} {
		for _, plpgsql := range []bool{false, true} {
			measure(t, text, plpgsql)
		}
	}
}
