package pgcatalog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// resolveQueries are the queries engine.Resolve runs, every one: what the
// fingerprint must cover.
func resolveQueries() map[string]string {
	// The statement they are sent in, as engine.Resolve builds it.
	var together Reads
	rel := together.Add(RelationsRead("", "t", "writer_epoch"))
	together.Add(UnguardedRead("SELECT c1::pg_catalog.oid FROM " + together.Ref(rel)))
	together.Add(UncarriedRead("SELECT c1::pg_catalog.oid FROM " + together.Ref(rel)))
	for _, r := range SnapshotReads([]string{"writer_epoch"}, true) {
		together.Add(r)
	}
	sql, _ := together.SQL()
	return map[string]string{"together": sql,
		"version": versionSQL, "relations": RelationsSQL("$1::text", "$2::text", "$3::text"), "unguarded": UnguardedRead("SELECT 1::oid").SQL, "uncarried": UncarriedRead("SELECT 1::oid").SQL,
		"similar": similarSQL, "search path": searchPathSQL,
		"functions": FunctionsSQL, "built-ins": BuiltinsSQL, "edges": EdgesSQL, "columns": ColumnsSQL, "triggers": TriggersSQL,
		"rules": RulesSQL, "foreign keys": ForeignKeysSQL, "views": ViewsSQL, "operators": OperatorsSQL,
		"attribute calls": AttributeCallsSQL, "extension members": ExtensionFunctionsSQL, "materialized views": MatViewsSQL,
	}
}

// serverReads are the catalogs whose rows each server function a query calls reads
// (what its answer depends on besides its arguments). A function missing here fails
// TestFingerprintCoversQueries: say what it reads before a query uses it.
var serverReads = map[string][]string{
	// Depend on no catalog row.
	"count": nil, "max": nil, "min": nil, "sum": nil, "coalesce": nil, "unnest": nil, "json_agg": nil, "array_to_json": nil,
	"jsonb_array_elements_text": nil, "json_build_array": nil, "string_to_array": nil, "abs": nil, "string_agg": nil, "length": nil, "pg_advisory_lock": nil, "pg_advisory_unlock": nil,
	// The sequence's value is no catalog row: it matters only where the catalog
	// version is installed, and there catalog_refresh does not read the fingerprint.
	"pg_sequence_last_value":   nil,
	"to_regclass":              {"pg_class", "pg_namespace"},
	"current_schemas":          {"pg_namespace"},
	"format_type":              {"pg_type", "pg_namespace"},
	"pg_get_functiondef":       {"pg_proc", "pg_namespace", "pg_language", "pg_type"},
	"pg_relation_is_updatable": {"pg_class", "pg_attribute", "pg_rewrite", "pg_trigger"},
	// A view's or rule's query, deparsed: every object it names.
	"pg_get_viewdef":  {"pg_rewrite", "pg_class", "pg_attribute", "pg_namespace", "pg_proc", "pg_aggregate", "pg_operator", "pg_type", "pg_collation"},
	"pg_get_ruledef":  {"pg_rewrite", "pg_class", "pg_attribute", "pg_namespace", "pg_proc", "pg_aggregate", "pg_operator", "pg_type", "pg_collation"},
	"pg_get_indexdef": {"pg_index", "pg_class", "pg_attribute", "pg_namespace", "pg_am", "pg_opclass", "pg_collation", "pg_proc", "pg_operator", "pg_type"},
}

// castReads are the catalogs a cast to an object identifier type looks names up in.
var castReads = map[string][]string{"regclass": {"pg_class", "pg_namespace"}, "regnamespace": {"pg_namespace"}}

// TestFingerprintCoversQueries: every catalog a query of Resolve reads — in FROM, or
// through a server function or a regclass cast — is one the fingerprint covers, so
// that no change the full read would see leaves the fingerprint where it was. Besides
// them the fingerprint covers pg_db_role_setting (the search_path of the sessions the
// catalog is read on) and nothing else: it costs a scan of each.
func TestFingerprintCoversQueries(t *testing.T) {
	need := map[string][]string{} // catalog → the queries that read it
	for name, sql := range resolveQueries() {
		out, err := pgquery.ParseToJSON(sql)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var tree any
		if err := json.Unmarshal([]byte(out), &tree); err != nil {
			t.Fatal(err)
		}
		add := func(catalog string) {
			if !slices.Contains(need[catalog], name) {
				need[catalog] = append(need[catalog], name)
			}
		}
		ctes := map[string]bool{}
		walkJSON(tree, func(kind string, node map[string]any) {
			if kind == "CommonTableExpr" {
				ctes[node["ctename"].(string)] = true
			}
		})
		walkJSON(tree, func(kind string, node map[string]any) {
			switch kind {
			case "RangeVar":
				rel, _ := node["relname"].(string)
				if ctes[rel] {
					return
				}
				if !strings.HasPrefix(rel, "pg_") {
					t.Errorf("%s reads %q, not a catalog", name, rel)
				}
				add(rel)
			case "FuncCall":
				fn := lastName(node["funcname"])
				reads, ok := serverReads[fn]
				if !ok {
					t.Errorf("%s calls %s: add the catalogs it reads to serverReads", name, fn)
				}
				for _, c := range reads {
					add(c)
				}
			case "TypeCast":
				tn, _ := node["typeName"].(map[string]any)
				for _, c := range castReads[lastName(tn["names"])] {
					add(c)
				}
			}
		})
	}
	for catalog, by := range need {
		if !slices.Contains(FingerprintCatalogs, catalog) {
			t.Errorf("%s is read by %v, but the fingerprint does not cover it", catalog, by)
		}
	}
	for _, c := range FingerprintCatalogs {
		if _, ok := need[c]; !ok && c != "pg_db_role_setting" {
			t.Errorf("the fingerprint covers %s, which no query reads", c)
		}
	}
	if !strings.Contains(FingerprintSQL, "pg_catalog.pg_db_role_setting") {
		t.Error("the fingerprint's query leaves out pg_db_role_setting")
	}
}

// walkJSON calls visit for every node of pg_query's JSON tree, with its type name.
func walkJSON(v any, visit func(kind string, node map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if m, ok := c.(map[string]any); ok && k != "" && k[0] >= 'A' && k[0] <= 'Z' {
				visit(k, m)
			}
			walkJSON(c, visit)
		}
	case []any:
		for _, c := range x {
			walkJSON(c, visit)
		}
	}
}

// lastName is the last String of a name list (funcname, a type's names).
func lastName(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	m, _ := list[len(list)-1].(map[string]any)
	s, _ := m["String"].(map[string]any)
	name, _ := s["sval"].(string)
	return name
}

// TestFingerprintSQLParses: the fingerprint's query is one SELECT, every name in it
// qualified with pg_catalog (it may run on an application's session).
func TestFingerprintSQLParses(t *testing.T) {
	out, err := pgquery.ParseToJSON(FingerprintSQL)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		t.Fatal(err)
	}
	walkJSON(tree, func(kind string, node map[string]any) {
		switch kind {
		case "RangeVar":
			if node["schemaname"] != "pg_catalog" {
				t.Errorf("unqualified relation %v", node["relname"])
			}
		case "FuncCall":
			if l, _ := node["funcname"].([]any); len(l) != 2 {
				t.Errorf("unqualified function %v", node["funcname"])
			}
		case "A_Expr", "TypeCast":
			t.Errorf("an operator or cast, which the search path resolves: %v", node)
		}
	})
}
