package pgtree

import (
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

func TestEqualIgnoresPositionsOnly(t *testing.T) {
	parse := func(sql string) *pg.ParseResult {
		t.Helper()
		r, err := pgquery.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := parse("UPDATE t SET a = 1 WHERE b = $1")
	for sql, want := range map[string]bool{
		"update t set a=1 where b=$1":            true,
		"UPDATE t /* c */ SET a = 1\nWHERE b=$1": true,
		"UPDATE t SET a = 2 WHERE b = $1":        false,
		"UPDATE t SET a = 1 WHERE b = $2":        false,
		"UPDATE t SET a = 1 WHERE b = $1 AND c":  false,
		"UPDATE ONLY t SET a = 1 WHERE b = $1":   false,
		"UPDATE t SET a = 1":                     false,
	} {
		if got := Equal(base.ProtoReflect(), parse(sql).ProtoReflect()); got != want {
			t.Errorf("%s: Equal = %v, want %v", sql, got, want)
		}
	}
}

func TestWrites(t *testing.T) {
	for sql, want := range map[string]string{
		"SELECT 1":           "",
		"UPDATE a SET x = 1": "UPDATE a",
		"WITH d AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM d":                "INSERT b,DELETE a",
		"EXPLAIN UPDATE a SET x = 1":                                                         "",
		"EXPLAIN ANALYZE UPDATE a SET x = 1":                                                 "UPDATE a",
		"EXPLAIN (ANALYZE false, ANALYZE) DELETE FROM a":                                     "DELETE a",
		"MERGE INTO a USING b ON true WHEN MATCHED THEN DELETE":                              "MERGE a",
		"PREPARE p AS UPDATE a SET x = 1":                                                    "UPDATE a (PREPARE)",
		"CREATE RULE r AS ON INSERT TO b DO ALSO DELETE FROM a":                              "DELETE a (RULE)",
		"CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE a SET x = 1; END": "UPDATE a (FUNCTION)",
	} {
		tree, err := pgquery.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range Writes(tree.ProtoReflect(), nil) {
			s := w.Kind + " " + w.Relation.Relname
			if w.In != "" {
				s += " (" + w.In + ")"
			}
			got = append(got, s)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: got %q, want %q", sql, strings.Join(got, ","), want)
		}
	}
}
