package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// shapeSeeds are statements where a literal's value decides, or could decide, what
// sqlfence does: each must be kept by a plan, so that a text of the same shape with
// another value there is analysed in full.
var shapeSeeds = []string{
	`SELECT set_config('application_name', 'x', false)`,
	`SELECT set_config('sqlfence.x', 'y', false)`,
	`SELECT pg_catalog.set_config('search_path', 'public', true)`,
	`SELECT current_setting('application_name')`,
	`SELECT 'inventory'::regclass`,
	`SELECT * FROM pg_class WHERE oid = 'inventory'::regclass`,
	`SELECT nextval('s')`,
	`SELECT query_to_xml('select 1', true, true, '')`,
	`SET application_name = 'x'`,
	`SET LOCAL statement_timeout = '5s'`,
	`SET search_path = 'public'`,
	`EXPLAIN (ANALYZE 'false') UPDATE inventory SET quantity = 1`,
	`EXPLAIN (ANALYZE 'off', FORMAT 'json') DELETE FROM inventory WHERE sku = 'a'`,
	`EXPLAIN ANALYZE UPDATE inventory SET quantity = 1 WHERE sku = 'a'`,
	`DO $$ BEGIN PERFORM 1; END $$`,
	`DO 'BEGIN PERFORM 1; END'`,
	`DO LANGUAGE 'plpgsql' $$ BEGIN UPDATE inventory SET quantity = 1; END $$`,
	`COPY inventory TO STDOUT WITH (FORMAT 'csv')`,
	`COPY staging FROM STDIN WITH (FORMAT 'csv', DELIMITER ',')`,
	`SELECT U&'\0041' UESCAPE '!'`,
	`UPDATE inventory SET note = U&'!0041' UESCAPE '!' WHERE sku = 'a'`,
	`SELECT * FROM inventory ORDER BY 1`,
	`SELECT sku, count(*) FROM inventory GROUP BY 1`,
	`SELECT pg_advisory_lock(1)`,
	`CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'select 1'`,
	`UPDATE inventory SET quantity = quantity - 1 WHERE sku IN ('a', 'b') RETURNING sku`,
	`UPDATE inventory SET quantity = -1, note = 'a' || 'b' WHERE sku = 'a' AND quantity > 1.5`,
	`UPDATE inventory AS i SET quantity = s.q FROM staging s WHERE i.sku = s.sku AND s.n = 'x'`,
	`DELETE FROM inventory WHERE sku = 'a' AND note LIKE 'x%'`,
	`DELETE FROM inventory USING staging WHERE inventory.sku = staging.sku AND staging.gone = 'true'`,
	`INSERT INTO inventory (sku, quantity) VALUES ('a', 1), ('b', 2)`,
	`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2`,
	`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note = 'n'`,
	`INSERT INTO inventory (sku, quantity) SELECT 'a', 1 WHERE 'x' = 'x'`,
	`WITH u AS (UPDATE inventory SET quantity = 1 WHERE sku = 'a' RETURNING sku) SELECT * FROM u WHERE sku <> 'b'`,
	`WITH s AS (SELECT 'a' AS sku) UPDATE inventory SET quantity = 2 FROM s WHERE inventory.sku = s.sku`,
	`MERGE INTO inventory i USING staging s ON i.sku = s.sku AND s.n = 'x' WHEN MATCHED AND s.q > 1 THEN UPDATE SET quantity = 3 WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, 4)`,
	`UPDATE jobs SET status = 'running' WHERE id = 1`,
	`UPDATE inventory SET quantity = 1 WHERE sku = $1 AND note = 'x' LIMIT 1`,
	`SELECT * FROM inventory WHERE sku = 'a' LIMIT 5 OFFSET 2`,
	`UPDATE inventory SET quantity = 1 WHERE sku = 'a' -- c` + "\n" + `/* d */ AND note = 'b'`,
	"UPDATE inventory SET note = 'a'\n'b' WHERE sku = E'\\'' AND quantity = 99999999999",
	`UPDATE inventory SET note = $$x$$ WHERE sku = $q$y$q$`,
	`UPDATE inventory SET note = B'101'::text, quantity = X'ff'::int WHERE sku = 'a'`,
	`UPDATE reports SET body = 'x' WHERE id = 1`,
	`UPDATE billing.invoices SET total = 1 WHERE id = 2`,
	`SELECT 1 FROM inventory WHERE sku = 'a'::text AND quantity = ANY('{1,2}')`,
	`SELECT * FROM inventory WHERE (sku, quantity) = ('a', 1)`,
	`UPDATE inventory SET (quantity, note) = (1, 'x') WHERE sku = 'a'`,
	`UPDATE inventory SET quantity = CASE WHEN sku = 'a' THEN 1 ELSE 2 END`,
	`SELECT 1; UPDATE inventory SET quantity = 1 WHERE sku = 'a'`,
}

// shapeWords are the values a fuzzed variant puts in place of literals: names that
// matter to some judge somewhere.
var shapeWords = []string{
	"role", "search_path", "application_name", "standard_conforming_strings", "off", "on", "false", "true", "0", "1",
	"inventory", "public.inventory", "jobs", "billing.recalc", "select 1", "sqlfence.x", "plpgsql", "sql", "csv",
	"BEGIN UPDATE inventory SET quantity = 1; END", "!", "\\", "", "''", "x",
}

// variant returns sql with its maskable literals replaced by values salt picks: a
// text of the same shape unless the salt changes a literal's kind.
func variant(sql, salt string) string {
	toks, err := pgtree.ScanTokens(sql, nil)
	if err != nil {
		return sql
	}
	var b strings.Builder
	at, n := 0, 0
	pick := func() int {
		if len(salt) == 0 {
			n++
			return n
		}
		c := int(salt[n%len(salt)])
		n++
		return c + n
	}
	for _, t := range toks {
		if !maskable(t.Kind) {
			continue
		}
		v := pick()
		if v%5 == 0 {
			continue // keep this one
		}
		var repl string
		switch t.Kind {
		case pg.Token_SCONST:
			w := shapeWords[v%len(shapeWords)]
			if v%7 == 0 {
				w = salt
			}
			w = strings.ReplaceAll(w, "\x00", "")
			repl = "'" + strings.ReplaceAll(w, "'", "''") + "'"
			if v%11 == 0 && !strings.Contains(w, "$") {
				repl = "$$" + w + "$$"
			}
		case pg.Token_ICONST:
			repl = strconv.Itoa(v % 100_000)
		case pg.Token_FCONST:
			repl = strconv.Itoa(v%100) + ".5"
		case pg.Token_BCONST:
			repl = "B'" + strconv.FormatInt(int64(v), 2) + "'"
		case pg.Token_XCONST:
			repl = "X'" + strconv.FormatInt(int64(v), 16) + "'"
		}
		b.WriteString(sql[at:t.Start])
		b.WriteString(repl)
		at = int(t.End)
	}
	b.WriteString(sql[at:])
	return b.String()
}

// checkShape: when b has a's shape and a's plan takes b, the decision is exactly
// the one a full analysis of b takes; and a's plan gives a its own decision.
func checkShape(t *testing.T, p *Policy, a, b string) (hit bool) {
	t.Helper()
	da, plan := analyzeShaped(p, a, nil, nil, true)
	if plan == nil || !shapeable(b) {
		return false // the enforcer analyses such texts in full (enforcer.decide)
	}
	scanA, errA := pgtree.ScanTokens(a, nil)
	scanB, errB := pgtree.ScanTokens(b, nil)
	if errA != nil || errB != nil {
		return false
	}
	toksA, keyA, runsA := shapeOf(a, scanA)
	toksB, keyB, runsB := shapeOf(b, scanB)
	if got := plan.derive(a, toksA, runsA); got == nil || !sameDecision(t, p, a, got, da) {
		t.Fatalf("the plan of\n\t%s\ndoes not give its own text its decision: %s, want %s", a, outcomeOrNil(got), outcome(da))
	} else {
		checkPlanLiteral(t, got)
	}
	if keyA != keyB {
		return false
	}
	got := plan.derive(b, toksB, runsB)
	if got == nil {
		return false
	}
	if want := Analyze(p, b); !sameDecision(t, p, b, got, want) {
		t.Fatalf("shape of\n\t%s\ndecides\n\t%s\nas %s, its own analysis as %s", a, b, outcome(got), outcome(want))
	}
	checkPlanLiteral(t, got)
	return true
}

func outcomeOrNil(d *Decision) string {
	if d == nil {
		return "no decision"
	}
	return outcome(d)
}

// sameDecision compares what the driver uses of a decision, the classification
// query included (built for got from the text query).
func sameDecision(t *testing.T, p *Policy, query string, got, want *Decision) bool {
	t.Helper()
	if got.act != want.act || got.sql != want.sql || got.epochParam != want.epochParam || got.catalog != want.catalog ||
		got.claimTable != want.claimTable || got.checked != want.checked || !slices.Equal(got.tables, want.tables) {
		return false
	}
	gc, wc := got.zeroRows, want.zeroRows
	if (gc == nil) != (wc == nil) {
		t.Logf("classifier %v, want %v", gc, wc)
		return false
	}
	if gc == nil {
		return true
	}
	if gc = gc.resolve(p, query, got.sql); gc == nil {
		t.Logf("the classifier does not resolve")
		return false
	}
	if wc = wc.numbered(); wc == nil {
		t.Logf("the analysis's classifier does not renumber")
		return false
	}
	return gc.table == wc.table && gc.query == wc.query && slices.Equal(gc.args, wc.args) &&
		gc.conflictOnly == wc.conflictOnly && gc.returning == wc.returning
}

// FuzzShape is the differential check of decisions by shape: a statement and a
// variant with other literal values, decided by the statement's plan and by a full
// analysis, must agree exactly — text, parameters, tables, classification query.
// The seeds are the golden statements, the differential corpus and shapeSeeds (where
// a literal matters); `go test` runs them with a few salts. The long run:
//
//	go test -run '^$' -fuzz FuzzShape -fuzztime 60s .
func FuzzShape(f *testing.F) {
	p := testPolicy(f)
	for _, s := range shapeSeedCorpus(f) {
		for _, salt := range []string{"", "a", "\x03\x07", "role", "\x00\x10\x20\x30"} {
			f.Add(s, salt)
		}
	}
	f.Fuzz(func(t *testing.T, sql, salt string) {
		if len(sql) > 1<<14 {
			return
		}
		v := variant(sql, salt)
		checkShape(t, p, sql, v)
		checkShape(t, p, sql, squeeze(v, salt))
		checkShape(t, p, sql, lengthen(v, salt)) // shape_lists_test.go
	})
}

// squeeze returns sql with the whitespace between some of its tokens (salt picks
// which) taken out where one side is not a word character: mostly a text of the same
// tokens, with a literal or a quoted name touching the keyword after it.
func squeeze(sql, salt string) string {
	toks, err := pgtree.ScanTokens(sql, nil)
	if err != nil || len(salt) == 0 {
		return sql
	}
	word := func(c byte) bool {
		return c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
	}
	var b strings.Builder
	at := 0
	for i, t := range toks {
		if i > 0 && salt[i%len(salt)]%3 != 1 && at < int(t.Start) && strings.TrimSpace(sql[at:t.Start]) == "" &&
			(!word(sql[at-1]) || !word(sql[t.Start])) {
			at = int(t.Start)
		}
		b.WriteString(sql[at:t.End])
		at = int(t.End)
	}
	b.WriteString(sql[at:])
	return b.String()
}

func shapeSeedCorpus(tb testing.TB) []string {
	seeds := append(slices.Clone(shapeSeeds), inListSeeds...)
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		in, _, _ := strings.Cut(string(data), goldenSeparator)
		seeds = append(seeds, in)
	}
	files, _ = filepath.Glob("../../testdata/corpus/*.sql")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, block := range strings.Split(string(data), "\n--! name:")[1:] {
			var stmt []string
			for _, line := range strings.Split(block, "\n")[1:] {
				if !strings.HasPrefix(line, "--!") {
					stmt = append(stmt, line)
				}
			}
			seeds = append(seeds, strings.TrimSpace(strings.Join(stmt, "\n")))
		}
	}
	if len(seeds) < 100 {
		tb.Fatalf("only %d seeds", len(seeds))
	}
	return seeds
}

// TestShapeAdversarial: texts of one shape whose literals decide differently. Each
// pair must be decided like its own analysis, and where the decisions differ the
// plan must not take the second text at all.
func TestShapeAdversarial(t *testing.T) {
	p := testPolicy(t)
	for _, c := range [][2]string{
		{`SELECT set_config('application_name', 'x', false)`, `SELECT set_config('role', 'x', false)`},
		{`SELECT set_config('application_name', 'x', false)`, `SELECT set_config('application_name', 'y', true)`},
		{`SET application_name = 'x'`, `SET role = 'x'`},
		{`SET standard_conforming_strings = 'on'`, `SET standard_conforming_strings = 'off'`},
		{`EXPLAIN (ANALYZE 'false') UPDATE inventory SET quantity = 1`, `EXPLAIN (ANALYZE 'true') UPDATE inventory SET quantity = 1`},
		{`DO $$ BEGIN PERFORM 1; END $$`, `DO $$ BEGIN UPDATE inventory SET quantity = 1; END $$`},
		{`DO LANGUAGE 'plpgsql' 'BEGIN NULL; END'`, `DO LANGUAGE 'sql' 'BEGIN NULL; END'`},
		{`SELECT query_to_xml('select 1', true, true, '')`, `SELECT query_to_xml('delete from inventory', true, true, '')`},
		{`COPY staging TO STDOUT WITH (FORMAT 'csv')`, `COPY staging TO STDOUT WITH (FORMAT 'binary')`},
		{`SELECT U&'!0041' UESCAPE '!'`, `SELECT U&'!0041' UESCAPE '\'`},
		{`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`, `UPDATE inventory SET quantity = 1 WHERE sku = 'b'`},
		{`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2`,
			`INSERT INTO inventory (sku, quantity) VALUES ('zz', 7) ON CONFLICT (sku) DO UPDATE SET quantity = 3`},
		// The same tokens, one boundary without whitespace: the fence's $1::bigint
		// would run into the next keyword (the type bigintwhere, eating the WHERE).
		{`UPDATE inventory SET note = 'x' WHERE sku = 'a'`, `UPDATE inventory SET note = 'x'WHERE sku = 'a'`},
		{`UPDATE inventory SET note = 'x' WHERE sku = 'a' RETURNING sku`, `UPDATE inventory SET note = 'x' WHERE sku = 'a'RETURNING sku`},
		{`DELETE FROM inventory WHERE sku = 'a' RETURNING sku`, `DELETE FROM inventory WHERE sku = 'b'RETURNING sku`},
		{`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET note = 'n' RETURNING sku`,
			`INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET note = 'n'RETURNING sku`},
		{`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND s.n = 'x' THEN UPDATE SET quantity = 3`,
			`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND s.n = 'x'THEN UPDATE SET quantity = 3`},
		{`UPDATE inventory SET note = "note" WHERE sku = 'a'`, `UPDATE inventory SET note = "note"WHERE sku = 'a'`},
	} {
		a, b := c[0], c[1]
		da, db := Analyze(p, a), Analyze(p, b)
		hit := checkShape(t, p, a, b)
		differ := da.act != db.act || (da.refusal == nil) != (db.refusal == nil)
		if hit && differ {
			t.Errorf("%s\n%s\ndecide differently, yet one plan took both", a, b)
		}
	}
}

// TestShapeSeedsHit: the plain-value statements of shapeSeeds are decided by shape
// when only their values change (so the differential check is not vacuous), and the
// ones where a literal matters are not.
func TestShapeSeedsHit(t *testing.T) {
	p := testPolicy(t)
	for _, c := range []struct {
		a, b string
		hit  bool
	}{
		{`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`, `UPDATE inventory SET quantity = 25 WHERE sku = 'bcd'`, true},
		{`UPDATE inventory SET quantity = quantity - 1 WHERE sku IN ('a', 'b') RETURNING sku`, `UPDATE   inventory SET quantity = quantity - 9 WHERE sku IN ('x', 'y') /* c */ RETURNING sku`, true},
		{`INSERT INTO inventory (sku, quantity) VALUES ('a', 1), ('b', 2)`, `INSERT INTO inventory (sku, quantity) VALUES ('c', 3), ('d', 4)`, true},
		{`SELECT * FROM inventory WHERE sku = 'a' LIMIT 5`, `SELECT * FROM inventory WHERE sku = 'b' LIMIT 6`, true},
		{`UPDATE inventory SET quantity = 1, note = 'x'::text WHERE sku = 'a'`, `UPDATE inventory SET quantity = 1, note = 'y'::text WHERE sku = 'a'`, false},
		{`SELECT nextval('s')`, `SELECT nextval('t')`, false},
		{`SELECT 'inventory'::regclass`, `SELECT 'jobs'::regclass`, false},
		{`SELECT * FROM inventory ORDER BY 1`, `SELECT * FROM inventory ORDER BY 2`, false},
		{`SET application_name = 'x'`, `SET application_name = 'y'`, false},
	} {
		if got := checkShape(t, p, c.a, c.b); got != c.hit {
			t.Errorf("%s\n%s\nshape hit %v, want %v", c.a, c.b, got, c.hit)
		}
	}
}

// valueFields and reflectValueConstants are the walk valueConstants replaced, by
// protobuf reflection over a table of fields: the oracle it is held to.
//
// valueFields lists, for each node type a plain value can be reached through, the
// fields that lead to one: expression positions of DML statements. A node type not
// listed ends the walk, and so does every field not listed (a function call's
// arguments, a cast, a subscript, ORDER BY and GROUP BY positions, DEFAULT, …).
var valueFields = map[protoreflect.FullName][]protoreflect.Name{
	"pg_query.ParseResult":      {"stmts"},
	"pg_query.RawStmt":          {"stmt"},
	"pg_query.SelectStmt":       {"target_list", "from_clause", "where_clause", "values_lists", "limit_count", "limit_offset", "with_clause", "larg", "rarg", "having_clause"},
	"pg_query.InsertStmt":       {"select_stmt", "on_conflict_clause", "returning_list", "with_clause"},
	"pg_query.UpdateStmt":       {"target_list", "where_clause", "from_clause", "returning_list", "with_clause"},
	"pg_query.DeleteStmt":       {"using_clause", "where_clause", "returning_list", "with_clause"},
	"pg_query.OnConflictClause": {"target_list", "where_clause"},
	"pg_query.WithClause":       {"ctes"},
	"pg_query.CommonTableExpr":  {"ctequery"},
	"pg_query.ResTarget":        {"val"},
	"pg_query.A_Expr":           {"lexpr", "rexpr"},
	"pg_query.BoolExpr":         {"args"},
	"pg_query.NullTest":         {"arg"},
	"pg_query.BooleanTest":      {"arg"},
	"pg_query.List":             {"items"},
	"pg_query.SubLink":          {"testexpr", "subselect"},
	"pg_query.JoinExpr":         {"larg", "rarg", "quals"},
	"pg_query.RangeSubselect":   {"subquery"},
}

// valueFieldDescs is valueFields resolved to descriptors once.
var valueFieldDescs = func() map[protoreflect.MessageDescriptor][]protoreflect.FieldDescriptor {
	file := (&pg.ParseResult{}).ProtoReflect().Descriptor().ParentFile()
	out := map[protoreflect.MessageDescriptor][]protoreflect.FieldDescriptor{}
	for name, fields := range valueFields {
		desc := file.Messages().ByName(name.Name())
		for _, f := range fields {
			out[desc] = append(out[desc], desc.Fields().ByName(f))
		}
	}
	return out
}()

var (
	aConstDesc = (&pg.A_Const{}).ProtoReflect().Descriptor()
	nodeDesc   = (&pg.Node{}).ProtoReflect().Descriptor()
	nodeOneof  = nodeDesc.Oneofs().Get(0)
)

// reflectValueConstants returns the locations of the constants in tree that are plain
// values (see valueFields).
func reflectValueConstants(tree *pg.ParseResult) []int32 {
	var locs []int32
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		switch desc := m.Descriptor(); desc {
		case aConstDesc:
			locs = append(locs, m.Interface().(*pg.A_Const).Location)
		case nodeDesc: // a oneof wrapper: the node it holds decides
			if fd := m.WhichOneof(nodeOneof); fd != nil && fd.Kind() == protoreflect.MessageKind {
				walk(m.Get(fd).Message())
			}
		default:
			for _, fd := range valueFieldDescs[desc] {
				if !m.Has(fd) {
					continue
				}
				if v := m.Get(fd); fd.IsList() {
					for i, l := 0, v.List(); i < l.Len(); i++ {
						walk(l.Get(i).Message())
					}
				} else {
					walk(v.Message())
				}
			}
		}
	}
	walk(tree.ProtoReflect())
	return locs
}

// TestValueFields: every field valueFields names exists, so no path is silently
// dropped by a misspelling; and valueConstants finds exactly the constants the
// table-driven walk finds, over the corpora.
func TestValueFields(t *testing.T) {
	tree, err := pgquery.Parse("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	files := tree.ProtoReflect().Descriptor().ParentFile()
	for name, fields := range valueFields {
		d := files.Messages().ByName(name.Name())
		if d == nil {
			t.Errorf("no message %s", name)
			continue
		}
		for _, f := range fields {
			if d.Fields().ByName(f) == nil {
				t.Errorf("%s has no field %s", name, f)
			}
		}
	}
	n := 0
	for _, q := range corpusStatements(t) {
		tree, err := pgquery.Parse(q)
		if err != nil {
			continue
		}
		got, _ := valueConstants(tree)
		want := reflectValueConstants(tree)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q: value constants at %v, want %v", q, got, want)
		}
		n++
	}
	if n < 400 {
		t.Fatalf("only %d corpus statements parsed", n)
	}
}

// corpusStatements returns the statements of the repository's SQL corpora, one per
// entry, and each file whole.
func corpusStatements(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../../testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".sql") {
			return err
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, q := range strings.Split(string(text), "\n--! name:") {
			if i := strings.Index(q, "\n"); i >= 0 && !strings.HasPrefix(q, "--") {
				q = q[i:]
			}
			out = append(out, q)
		}
		out = append(out, string(text))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShapeThroughCache: the enforcer decides the second text of a shape from the
// plan, counts it, and sends what the analysis would.
func TestShapeThroughCache(t *testing.T) {
	f := testEnforcer(t, testPolicy(t))
	a := `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`
	b := `UPDATE inventory SET quantity = 2 WHERE sku = 'b' -- another`
	f.Decide(a)
	d := f.Decide(b)
	if st := f.cache.stats(); st.ShapeHits != 1 || st.Misses != 2 {
		t.Fatalf("stats %+v, want 2 misses, 1 decided by shape", st)
	}
	if want := Analyze(f.policy, b); d.sql != want.sql || d.act != ActRewrite {
		t.Fatalf("sent %q, want %q", d.sql, want.sql)
	}
	// Texts decided by shape are cached from their second sighting on.
	if second := f.Decide(b); f.Decide(b) != second {
		t.Fatal("the decision taken by shape was not cached under its text on its second sighting")
	}
}

// TestClassifierMarkerInText: a statement that names a column sqlfence_epoch_marker
// (the placeholder the classification query holds for the epoch until renumber) gets
// no classification query: renumber would have turned the application's column into
// the epoch parameter too, and explained a 0-row result by another predicate. Its
// shape's plan agrees.
func TestClassifierMarkerInText(t *testing.T) {
	p := testPolicy(t)
	for _, q := range []string{
		`UPDATE inventory SET quantity = 1 FROM staging s WHERE inventory.sku = s.sku AND sqlfence_epoch_marker = 5`,
		`DELETE FROM inventory USING staging WHERE inventory.sku = staging.sku AND sqlfence_epoch_marker > 'a'`,
	} {
		d := Analyze(p, q)
		if d.act != ActRewrite {
			t.Fatalf("%s: %s", q, outcome(d))
		}
		if d.zeroRows != nil {
			t.Errorf("%s\nclassified by %q", q, d.zeroRows.query)
		}
		checkShape(t, p, q, variant(q, "a"))
	}
}

// TestCatalogEffectCreatesTable: statements that create a table under ddl: allow make
// the connector read the catalog again, SELECT … INTO and EXPLAIN ANALYZE of a CREATE
// TABLE AS among them; a plain SELECT or EXPLAIN does not.
func TestCatalogEffectCreatesTable(t *testing.T) {
	for q, want := range map[string]CatalogEffect{
		`SELECT 1 AS a INTO newtab`:                            CatalogDDL,
		`EXPLAIN ANALYZE CREATE TABLE newtab AS SELECT 1 AS a`: CatalogDDL,
		`EXPLAIN ANALYZE SELECT 1 AS a INTO newtab`:            CatalogDDL,
		`CREATE TABLE newtab AS SELECT 1 AS a`:                 CatalogDDL,
		`EXPLAIN CREATE TABLE newtab AS SELECT 1 AS a`:         0,
		`SELECT 1 AS a`:            0,
		`EXPLAIN ANALYZE SELECT 1`: 0,
	} {
		tree, err := pgquery.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := catalogEffectOf(tree); got != want {
			t.Errorf("%s: effect %b, want %b", q, got, want)
		}
	}
}
