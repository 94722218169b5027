package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// plpgsqlStatementKinds are the statement kinds of pg_query's PL/pgSQL parser (its
// PLpgSQL_stmt_type): TestPlpgsqlEverySlot must place a writer in each.
var plpgsqlStatementKinds = []string{
	"block", "assign", "if", "case", "loop", "while", "fori", "fors", "forc", "foreach_a", "exit", "return",
	"return_next", "return_query", "raise", "assert", "execsql", "dynexecute", "dynfors", "getdiag", "open",
	"fetch", "close", "perform", "call", "commit", "rollback",
}

// slotBodies are PL/pgSQL routine bodies in which § marks every place the parser
// reads an expression or a statement: declarations, assignment targets and values,
// conditions, bounds, arguments, options. setof says the routine returns SETOF int;
// dynamic that the body runs dynamic SQL, refused whatever the slots hold.
var slotBodies = []struct {
	body           string
	setof, dynamic bool
}{
	{body: `a := §; x := §; a[§] := §; a[§:§] := §; a[§][§:§] := §; r.f := §; r.f[§] := §;`},
	{body: `<<blk>> DECLARE q record; BEGIN blk.q.f := §; blk.q.f[§][§] := §; END;`},
	{body: `IF § THEN NULL; ELSIF § THEN NULL; ELSE PERFORM §; END IF;`},
	{body: `CASE § WHEN §, § THEN NULL; ELSE PERFORM §; END CASE; CASE WHEN § THEN NULL; END CASE;`},
	{body: `LOOP EXIT WHEN §; CONTINUE WHEN §; EXIT; END LOOP; WHILE § LOOP END LOOP;`},
	{body: `FOR i IN §..§ BY § LOOP END LOOP; FOR i IN REVERSE §..§ LOOP END LOOP;`},
	{body: `FOR r IN SELECT § LOOP END LOOP; FOR r IN c(§) LOOP END LOOP; FOREACH x SLICE 1 IN ARRAY § LOOP END LOOP;`},
	{body: `RETURN NEXT §; RETURN QUERY SELECT §; RETURN;`, setof: true},
	{body: `RETURN §;`},
	{body: `RAISE NOTICE '% %', §, § USING DETAIL = §, HINT = §; RAISE USING MESSAGE = §; ASSERT §; ASSERT §, §;`},
	{body: `SELECT § INTO x; INSERT INTO audit VALUES (§) RETURNING § INTO x; PERFORM §; CALL p(§); GET DIAGNOSTICS x = ROW_COUNT;`},
	{body: `OPEN c(§); OPEN u FOR SELECT §; OPEN u NO SCROLL FOR SELECT §; FETCH RELATIVE § FROM c INTO x; MOVE ABSOLUTE § FROM c; CLOSE c;`},
	{body: `BEGIN PERFORM §; EXCEPTION WHEN division_by_zero THEN PERFORM §; WHEN others THEN x := §; END; COMMIT; ROLLBACK;`},
	{body: `EXECUTE § INTO x USING §, §;`, dynamic: true},
	{body: `FOR r IN EXECUTE § USING § LOOP END LOOP;`, dynamic: true},
	{body: `OPEN u FOR EXECUTE § USING §;`, dynamic: true},
	{body: `RETURN QUERY EXECUTE § USING §;`, setof: true, dynamic: true},
}

// slotDeclarations come before every body; they hold slots of their own.
const slotDeclarations = `DECLARE a int[] := §; b int[] DEFAULT §; x int; r record; u refcursor; c CURSOR (k int) FOR SELECT k + §; BEGIN `

func fillSlots(text string, fill func(i int) string) string {
	parts := strings.Split(text, "§")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(p)
		if i < len(parts)-1 {
			b.WriteString(fill(i))
		}
	}
	return b.String()
}

// TestPlpgsqlEverySlot proves the PL/pgSQL judge reads every expression slot: the
// slot bodies cover every statement kind the parser produces and every expression it
// reads (each expression of the parse holds a slot's marker), and a writer placed in
// any one slot is refused while the body with harmless slots passes.
func TestPlpgsqlEverySlot(t *testing.T) {
	p := testPolicy(t)
	q := *p
	q.SafeFunctions = []QualifiedName{{Name: "p"}} // CALL p(…) itself passes; its argument is the slot
	kinds := map[string]bool{}
	for _, sb := range slotBodies {
		text := slotDeclarations + sb.body + " END"
		returns := "int"
		if sb.setof {
			returns = "SETOF int"
		}
		create := func(body string) string {
			return "CREATE FUNCTION slots() RETURNS " + returns + " LANGUAGE plpgsql AS $body$" + body + "$body$"
		}
		n := strings.Count(text, "§")

		// Every expression the parser reads holds a slot.
		marked := fillSlots(text, func(i int) string { return fmt.Sprintf("m%d()", i) })
		out, err := pgtree.ParsePlpgsql(create(marked), marked)
		if err != nil {
			t.Fatalf("%s: %v", marked, err)
		}
		var tree any
		if err := json.Unmarshal([]byte(out), &tree); err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for k, e := range v {
					if kind, ok := strings.CutPrefix(k, "PLpgSQL_stmt_"); ok {
						kinds[kind] = true
					}
					if k == "PLpgSQL_expr" {
						query, _ := e.(map[string]any)["query"].(string)
						found := false
						for i := range n {
							if strings.Contains(query, fmt.Sprintf("m%d()", i)) {
								seen[i], found = true, true
							}
						}
						if !found {
							t.Errorf("%s: the expression %q holds no slot", sb.body, query)
						}
						continue
					}
					walk(e)
				}
			}
		}
		walk(tree)
		for i := range n {
			if !seen[i] {
				t.Errorf("%s: slot %d is in no expression of the parse", sb.body, i)
			}
		}

		// A writer in any one slot is refused; harmless slots pass.
		for i := range n {
			body := fillSlots(text, func(j int) string {
				if j == i {
					return "billing.recalc()"
				}
				return "1"
			})
			e := judgePlpgsql(&q, "the function", body, create(body))
			// A dynamic body is refused for the EXECUTE or the writer, whichever the
			// walk meets first.
			if e == nil || e.Code != rulecode.ListedFunction && !(sb.dynamic && e.Code == rulecode.DynamicSQL) {
				t.Errorf("writer in slot %d of %s: %v, want the refusal of the listed function", i, body, e)
			}
		}
		body := fillSlots(text, func(int) string { return "1" })
		e := judgePlpgsql(&q, "the function", body, create(body))
		if sb.dynamic != (e != nil) || e != nil && e.Code != rulecode.DynamicSQL {
			t.Errorf("harmless slots in %s: %v", body, e)
		}
	}
	var missing []string
	for _, k := range plpgsqlStatementKinds {
		if !kinds[k] {
			missing = append(missing, k)
		}
	}
	var extra []string
	for k := range kinds {
		if !slices.Contains(plpgsqlStatementKinds, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("statement kinds without a slot body: %v; kinds the parser produced that the list lacks: %v", missing, extra)
	}
}
