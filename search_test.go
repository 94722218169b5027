package sqlfence_test

// The search with the server as the oracle: a seeded generator composes what a
// migration may have left in the database (functions of every volatility and
// language, overloads and shadows of built-ins, triggers, rules, views, cascading
// keys) and what a session then sends through sqlfence (calls in every syntax, in
// every statement that can carry an expression, settings first, DO blocks with a
// call in every slot), runs each composition through the attack harness
// (attack_test.go) with no, a stale and a fresh epoch, and judges it on the data:
// a protected row changed without the fresh epoch is a finding, printed in the attack
// files' format so that it can be kept under testdata/attacks as a regression case.
//
// One case in four is a session's instead (search_session_test.go): settings whose
// defaults come from the database or the role and that a batch, a multi-statement
// text, a transaction or a statement resets mid-way, in every exec mode, and query
// rewriters whose returned arguments begin with pgx's options. And one in four is
// the catalog's (search_catalog_test.go): with the guard installed and the catalog
// read, another session makes the object by a route that moves no catalog version
// (replica mode, the event triggers disabled, dropped or enabled for origin
// sessions only, the guard's trigger disabled), and the statement is sent again.
//
// go test runs a short search (SQLFENCE_SEARCH_CASES, default 24). A long one:
//
//	SQLFENCE_SEARCH_CASES=100000 SQLFENCE_SEARCH_DURATION=30m go test -run '^TestSearch$' -timeout 40m .
//
// SQLFENCE_SEARCH_SEED replays a search (every case is derived from it and its
// number); SQLFENCE_SEARCH_ONLY=N runs case N alone.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// srchObject is something a migration created, and the statements that reach it.
type srchObject struct {
	name  string
	setup string
	// calls are expressions that run the object (a writing function), usable in any
	// expression slot; from is the FROM item they need ("" for none).
	calls []srchCall
	// uses are whole statements that reach the object.
	uses []string
	// before are settings a session makes first for the object to be reached.
	before []string
	// pre is what exists before setup is run as DDL after the catalog read (the
	// catalog cases, search_catalog_test.go): a harmless object setup replaces.
	pre string
}

type srchCall struct{ expr, from string }

// srchVolatility is each marking a function may carry: none is proof of anything.
var srchVolatility = []string{"VOLATILE", "STABLE", "IMMUTABLE"}

// srchBodies are PL/pgSQL statements that write a protected table, directly or not.
var srchBodies = []string{
	`UPDATE inventory SET quantity = quantity + 1;`,
	`EXECUTE 'UPDATE inventory SET quantity = quantity + 2';`,
	`EXECUTE format('UPDATE %I SET quantity = 0', 'inventory');`,
	`DELETE FROM inventory WHERE sku = 'a';`,
	`INSERT INTO inventory (sku, quantity) VALUES ('srch' || random(), 1);`,
	`PERFORM query_to_xml('UPDATE inventory SET quantity = 4 RETURNING 1', true, true, '');`,
}

func srchObjects(r *rand.Rand) []srchObject {
	vol := func() string { return srchVolatility[r.IntN(len(srchVolatility))] }
	body := func() string { return srchBodies[r.IntN(len(srchBodies))] }
	// bound makes srch_<tag>_i(int), a wrapper of some marking around a writer of
	// some marking (an IMMUTABLE function cannot write, but the VOLATILE one it calls
	// can), then the object that runs it.
	bound := func(tag, object string) string {
		marking := vol()
		if strings.Contains(object, "INDEX") || strings.Contains(object, "GENERATED") {
			marking = "IMMUTABLE" // what the server requires there
		}
		return fmt.Sprintf(`CREATE FUNCTION public.srch_%[1]s_w() RETURNS int LANGUAGE plpgsql AS $$ BEGIN %[2]s RETURN 1; END $$;
CREATE FUNCTION public.srch_%[1]s_i(int) RETURNS int LANGUAGE plpgsql %[3]s AS $$ BEGIN PERFORM public.srch_%[1]s_w(); RETURN 1; END $$;
%[4]s`, tag, body(), marking, object)
	}
	return []srchObject{
		{name: "writer",
			setup: fmt.Sprintf(`CREATE FUNCTION public.srch_w(x int) RETURNS int LANGUAGE plpgsql %s AS $$ BEGIN %s RETURN 1; END $$;`, vol(), body()),
			calls: []srchCall{{"srch_w(1)", ""}, {"public.srch_w(1)", ""}, {"srch_w(x => 1)", ""}, {"srch_w(x := 1)", ""}, {"\"srch_w\"(1)", ""}}},
		{name: "sql-writer",
			setup: `CREATE FUNCTION public.srch_sw(int) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = quantity + 3 RETURNING 1 $$;`,
			calls: []srchCall{{"srch_sw(1)", ""}}},
		{name: "attribute",
			setup: fmt.Sprintf(`CREATE FUNCTION public.srch_a(staging) RETURNS int LANGUAGE plpgsql %s AS $$ BEGIN %s RETURN 1; END $$;`, vol(), body()),
			calls: []srchCall{{"s.srch_a", "staging s"}, {"(s).srch_a", "staging s"}, {"srch_a(s)", "staging s"}, {"(s.*).srch_a", "staging s"}}},
		{name: "overload",
			setup: fmt.Sprintf(`CREATE FUNCTION public.lower(int) RETURNS text LANGUAGE plpgsql %s AS $$ BEGIN %s RETURN 'x'; END $$;`, vol(), body()),
			calls: []srchCall{{"lower(1)", ""}, {"upper(lower(2))", ""}, {"length(lower(3))", ""}}},
		{name: "shadow",
			setup:  fmt.Sprintf(`CREATE FUNCTION public.length(text) RETURNS int LANGUAGE plpgsql %s AS $$ BEGIN %s RETURN 1; END $$;`, vol(), body()),
			calls:  []srchCall{{"length('a')", ""}},
			before: []string{`SET search_path = public, pg_catalog`}},
		{name: "schema-shadow",
			setup:  fmt.Sprintf(`CREATE SCHEMA srch; CREATE FUNCTION srch.abs(int) RETURNS int LANGUAGE plpgsql %s AS $$ BEGIN %s RETURN 1; END $$;`, vol(), body()),
			calls:  []srchCall{{"abs(1)", ""}},
			before: []string{`SET search_path = srch, pg_catalog, public`}},
		{name: "trigger",
			setup: fmt.Sprintf(`CREATE FUNCTION public.srch_t() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN %s RETURN NEW; END $$;
CREATE TRIGGER srch_t AFTER INSERT OR UPDATE OR DELETE ON staging FOR EACH ROW EXECUTE FUNCTION public.srch_t();`, body()),
			uses: []string{`INSERT INTO staging (sku) VALUES ('t')`, `UPDATE staging SET q = 9`, `DELETE FROM staging`,
				`WITH w AS (UPDATE staging SET q = 8 RETURNING 1) SELECT count(*) FROM w`}},
		{name: "rule",
			setup: `CREATE RULE srch_r AS ON INSERT TO audit DO ALSO UPDATE inventory SET quantity = 0;`,
			uses:  []string{`INSERT INTO audit VALUES ('r')`, `INSERT INTO audit SELECT sku FROM staging`}},
		{name: "view",
			setup: `CREATE VIEW public.srch_v AS SELECT * FROM inventory;`,
			uses: []string{`UPDATE srch_v SET quantity = 1`, `DELETE FROM srch_v WHERE sku = 'b'`,
				`INSERT INTO srch_v (sku, quantity) VALUES ('v', 1)`, `UPDATE public.srch_v SET quantity = $1`}},
		{name: "swapped-view",
			setup: `ALTER TABLE inventory ADD COLUMN other bigint NOT NULL DEFAULT 0;
CREATE VIEW public.srch_sv AS SELECT sku, quantity, note, other AS writer_epoch, writer_epoch AS other FROM inventory;`,
			uses: []string{`UPDATE srch_sv SET quantity = 2`, `UPDATE srch_sv SET quantity = 2 WHERE sku = 'a'`}},
		{name: "cascade",
			setup: `CREATE TABLE public.srch_p (sku text PRIMARY KEY); INSERT INTO srch_p SELECT sku FROM inventory;
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES srch_p ON UPDATE CASCADE ON DELETE CASCADE;`,
			uses: []string{`DELETE FROM srch_p`, `UPDATE srch_p SET sku = sku || 'x'`, `DELETE FROM srch_p WHERE sku = 'a'`}},
		// Routines the server runs for a statement unnamed (catalog_bound.go).
		{name: "bound-default",
			setup: bound("bd", "ALTER TABLE staging ALTER COLUMN n SET DEFAULT public.srch_bd_i(1)::text;"),
			uses: []string{`INSERT INTO staging (sku) VALUES ('d')`, `INSERT INTO staging DEFAULT VALUES`, `UPDATE staging SET n = DEFAULT`,
				`MERGE INTO staging s USING (SELECT 'm' AS sku) v ON s.sku = v.sku WHEN NOT MATCHED THEN INSERT (sku) VALUES (v.sku)`,
				`EXPLAIN INSERT INTO staging (sku) VALUES ('e')`}},
		{name: "bound-check",
			setup: bound("bc", "ALTER TABLE staging ADD CONSTRAINT srch_bc CHECK (public.srch_bc_i(1) > 0) NOT VALID;"),
			uses:  []string{`INSERT INTO staging (sku) VALUES ('c')`, `UPDATE staging SET q = 2 WHERE sku = 'a'`}},
		{name: "bound-index",
			// On a table of its own: building the index on staging's rows would run the writer in the setup.
			setup: bound("bx", "CREATE TABLE public.srch_ix (k int); CREATE INDEX srch_bx ON srch_ix ((public.srch_bx_i(k)));"),
			uses:  []string{`INSERT INTO srch_ix VALUES (1)`, `INSERT INTO public.srch_ix SELECT 2`}},
		{name: "bound-generated",
			setup: bound("bg", "CREATE TABLE public.srch_gen (k int, g int GENERATED ALWAYS AS (public.srch_bg_i(k)) STORED);"),
			uses:  []string{`INSERT INTO srch_gen (k) VALUES (1)`, `INSERT INTO public.srch_gen SELECT 2`}},
		{name: "bound-when",
			setup: bound("bt", `CREATE FUNCTION public.srch_bt_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER srch_bt BEFORE INSERT OR UPDATE ON staging FOR EACH ROW WHEN (public.srch_bt_i(1) > 0) EXECUTE FUNCTION public.srch_bt_noop();`),
			uses: []string{`INSERT INTO staging (sku) VALUES ('w')`, `UPDATE staging SET q = 3`}},
		{name: "bound-view",
			setup: bound("bv", "CREATE VIEW public.srch_bv AS SELECT public.srch_bv_i(1) AS x; CREATE VIEW public.srch_bv2 AS SELECT * FROM srch_bv;"),
			calls: []srchCall{{"x", "srch_bv"}, {"x", "public.srch_bv"}, {"x", "srch_bv2"}, {"(SELECT x FROM srch_bv)", ""}}},
		{name: "bound-domain",
			setup: bound("bm", "CREATE DOMAIN public.srch_dom AS int CHECK (public.srch_bm_i(VALUE) > 0); CREATE TABLE public.srch_dt (d srch_dom);"),
			calls: []srchCall{{"5::srch_dom", ""}, {"CAST(5 AS public.srch_dom)", ""}},
			uses:  []string{`INSERT INTO srch_dt DEFAULT VALUES`, `INSERT INTO srch_dt VALUES (1)`}},
		{name: "bound-cast",
			setup: bound("bk", `CREATE TYPE public.srch_box AS (a int);
CREATE FUNCTION public.srch_box_of(int) RETURNS srch_box LANGUAGE plpgsql AS $$ BEGIN PERFORM public.srch_bk_i($1); RETURN ROW($1); END $$;
CREATE CAST (int AS public.srch_box) WITH FUNCTION public.srch_box_of(int) AS ASSIGNMENT;
CREATE TABLE public.srch_boxes (b srch_box);`),
			calls: []srchCall{{"5::srch_box", ""}, {"CAST(5 AS srch_box)", ""}},
			uses:  []string{`INSERT INTO srch_boxes VALUES (5)`}},
	}
}

// srchSlots place a call: every statement that carries an expression.
var srchSlots = []string{
	`SELECT {CALL}{FROM}`,
	`SELECT 1{FROM}{WHERE} {CALL} > 0`,
	`SELECT (SELECT {CALL}{FROM})`,
	`VALUES ((SELECT {CALL}{FROM}))`,
	`SELECT * FROM (SELECT {CALL}{FROM}) x`,
	`WITH c AS (SELECT {CALL}{FROM}) SELECT * FROM c`,
	`UPDATE staging SET q = (SELECT {CALL}{FROM} LIMIT 1)`,
	`INSERT INTO staging (sku, q) SELECT 'c', {CALL}{FROM}`,
	`UPDATE inventory SET quantity = (SELECT {CALL}{FROM} LIMIT 1) WHERE sku = 'a'`,
	`DELETE FROM inventory WHERE sku = 'zz' AND (SELECT {CALL}{FROM} LIMIT 1) > 0`,
	`COPY (SELECT {CALL}{FROM}) TO STDOUT`,
	`EXPLAIN ANALYZE SELECT {CALL}{FROM}`,
	`SELECT count(*) FROM generate_series(1, 2) g WHERE g > ALL (SELECT {CALL}{FROM})`,
	`SELECT CASE WHEN true THEN (SELECT {CALL}{FROM} LIMIT 1) END`,
	`SELECT ARRAY[(SELECT {CALL}{FROM} LIMIT 1)]`,
	`SELECT 1 ORDER BY (SELECT {CALL}{FROM} LIMIT 1)`,
	`DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[(SELECT {CALL}{FROM} LIMIT 1)] := 3; END $$`,
	`DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[1:(SELECT {CALL}{FROM} LIMIT 1)] := '{3}'; END $$`,
	`DO $$ BEGIN IF (SELECT {CALL}{FROM} LIMIT 1) > 0 THEN NULL; END IF; END $$`,
	`DO $$ BEGIN PERFORM {CALL}{FROM}; END $$`,
	`DO $$ BEGIN RAISE NOTICE '%', (SELECT {CALL}{FROM} LIMIT 1); END $$`,
	`DO $$ DECLARE r record; BEGIN FOR r IN SELECT {CALL}{FROM} LOOP END LOOP; END $$`,
	`DO $$ DECLARE n int; BEGIN n := (SELECT {CALL}{FROM} LIMIT 1); END $$`,
}

// srchFenced are writes sqlfence fences: the search checks that a composition
// around them does not break the fence either.
var srchFenced = []string{
	`UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'a'`,
	`DELETE FROM inventory WHERE sku = 'b'`,
	`INSERT INTO inventory (sku, quantity) VALUES ('n', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2`,
	`MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED THEN UPDATE SET quantity = s.q`,
	`WITH u AS (UPDATE inventory SET note = 'w' RETURNING sku) SELECT count(*) FROM u`,
}

var srchSettings = []string{
	`SET search_path = public, pg_catalog`,
	`SET search_path = pg_temp, public`,
	`SET search_path = "$user", public`,
	`RESET search_path`,
	`SET statement_timeout = '5s'`,
}

// srchCompose derives case n of the search seeded with seed.
func srchCompose(seed uint64, n int) *atkCase {
	switch n % 4 {
	case 2:
		return srchSessionCase(seed, n) // search_session_test.go
	case 3:
		return srchCatalogCase(seed, n) // search_catalog_test.go
	}
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	objs := srchObjects(r)
	// The catalog is what makes sqlfence see past the text (resolve: none's holes are
	// documented, not searched for).
	c := &atkCase{file: "search", name: fmt.Sprintf("search-%d-%d", seed, n), class: "indirect-write", policy: "catalog", open: "connector"}
	var setup []string
	var steps []*atkStep
	add := func(sql string) { steps = append(steps, &atkStep{kind: "exec", sql: sql}) }
	for range 1 + r.IntN(2) {
		o := objs[r.IntN(len(objs))]
		if strings.Contains(strings.Join(setup, "\n"), o.setup) {
			continue
		}
		setup = append(setup, o.setup)
		if r.IntN(3) == 0 {
			add(srchSettings[r.IntN(len(srchSettings))])
		}
		for _, b := range o.before {
			add(b)
		}
		for range 1 + r.IntN(2) {
			steps = append(steps, srchReach(r, o))
		}
	}
	if r.IntN(3) == 0 {
		add(srchFenced[r.IntN(len(srchFenced))])
	}
	c.setup = strings.Join(setup, "\n")
	c.steps = steps
	return c
}

// srchReach is a statement that reaches o: one of its calls in a slot, or one of
// its uses.
func srchReach(r *rand.Rand, o srchObject) *atkStep {
	if len(o.calls) > 0 {
		call := o.calls[r.IntN(len(o.calls))]
		slot := srchSlots[r.IntN(len(srchSlots))]
		from, where := "", " WHERE"
		if call.from != "" {
			from, where = " FROM "+call.from, " AND"
		}
		if !strings.Contains(slot, "{FROM}{WHERE}") {
			where = ""
		} else if call.from == "" {
			where = " WHERE"
		}
		return &atkStep{kind: "exec", sql: strings.NewReplacer("{CALL}", call.expr, "{FROM}", from, "{WHERE}", where).Replace(slot)}
	}
	use := o.uses[r.IntN(len(o.uses))]
	s := &atkStep{kind: "exec", sql: use}
	if strings.Contains(use, "$1") {
		s.args = []any{int64(1)}
	}
	return s
}

// srchFormat writes a case in the attack files' format.
func srchFormat(c *atkCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--! name: %s\n--! class: %s\n--! policy: %s\n", c.name, c.class, c.policy)
	if c.mode != "" {
		fmt.Fprintf(&b, "--! mode: %s\n", c.mode)
	}
	for _, q := range c.afterConnect {
		fmt.Fprintf(&b, "--! afterconnect: %s\n", q)
	}
	for _, kv := range c.dsn {
		fmt.Fprintf(&b, "--! dsn: %s\n", kv)
	}
	fmt.Fprintf(&b, "--! setup\n%s\n", c.setup)
	if c.guard {
		b.WriteString("--! guard\n")
	}
	for _, s := range c.steps {
		opts := ""
		if s.rewrite {
			opts += " rewrite"
		}
		if len(s.rwargs) > 0 {
			opts += " rwargs=" + strings.Join(s.rwargs, ",")
		}
		if len(s.args) > 0 {
			js, _ := json.Marshal(s.args)
			opts += " args=" + string(js)
		}
		fmt.Fprintf(&b, "--! %s%s\n%s\n", s.kind, opts, s.sql)
		if s.rewrite {
			fmt.Fprintf(&b, "--! to\n%s\n", s.rewriteTo)
		}
	}
	return b.String()
}

func srchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// TestSearch runs the search and fails on every finding.
func TestSearch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the search needs PostgreSQL")
	}
	// A fixed seed by default, so that go test ./... is repeatable; long runs pass
	// their own.
	seed := uint64(srchEnv("SQLFENCE_SEARCH_SEED", 1))
	cases := srchEnv("SQLFENCE_SEARCH_CASES", 24)
	duration, _ := time.ParseDuration(os.Getenv("SQLFENCE_SEARCH_DURATION"))
	t.Logf("search seed %d (SQLFENCE_SEARCH_SEED=%d replays it)", seed, seed)
	pool := newAtkPool(t, 4)
	atkRequireSuperuser(t, pool)
	start := time.Now()
	var (
		next, runs, statements atomic.Int64
		mu                     sync.Mutex
		found                  []string
		wg                     sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= cases || duration > 0 && time.Since(start) > duration {
					return
				}
				if only := srchEnv("SQLFENCE_SEARCH_ONLY", -1); only >= 0 && n != only {
					continue
				}
				c := srchCompose(seed, n)
				front := "" // database/sql, and every other case the pgx front
				if n%2 == 1 {
					front = "pgx"
				}
				for _, run := range atkRuns {
					res := atkRun(pool, c, run.epoch, front, false)
					runs.Add(1)
					statements.Add(int64(len(res.outcomes)))
					if res.err != nil {
						mu.Lock()
						found = append(found, fmt.Sprintf("case %d (%s run): the harness failed: %v\n%s", n, run.name, res.err, srchFormat(c)))
						mu.Unlock()
						break
					}
					if len(res.violations) > 0 {
						var out []string
						for _, o := range res.outcomes {
							out = append(out, o.String())
						}
						mu.Lock()
						found = append(found, fmt.Sprintf("case %d (%s run, front %q): %s\n\toutcomes: %s\n%s", n, run.name, front,
							strings.Join(res.violations, "; "), strings.Join(out, "; "), srchFormat(c)))
						mu.Unlock()
						break
					}
				}
			}
		})
	}
	wg.Wait()
	t.Logf("search: %d cases, %d runs, %d statements in %v; %d findings", min(int(next.Load()), cases), runs.Load(), statements.Load(),
		time.Since(start).Round(time.Second), len(found))
	for _, f := range found {
		t.Errorf("finding (seed %d):\n%s", seed, f)
	}
}
