package pgtree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestParseMatches: the comparison of encodings agrees with Equal, the comparison of
// trees, on every pair of the statements below and of the golden statements: equal
// apart from positions, or not.
func TestParseMatches(t *testing.T) {
	texts := []string{
		"UPDATE t SET a = 1 WHERE b = $1",
		"update t set a=1 where b=$1",
		"UPDATE t /* c */ SET a = 1\nWHERE b=$1",
		"UPDATE t SET a = 2 WHERE b = $1",
		"UPDATE t SET a = 1 WHERE b = $2",
		"UPDATE t SET a = 1 WHERE b = $1 AND c",
		"UPDATE ONLY t SET a = 1 WHERE b = $1",
		"UPDATE t SET a = 1",
		"UPDATE t SET a = '1' WHERE b = $1",
		"UPDATE t SET a = 1.0 WHERE b = $1",
		"UPDATE t SET a = -1 WHERE b = $1",
		"UPDATE t SET a = 1 WHERE b = $1 AND t.writer_epoch OPERATOR(pg_catalog.<) $2::bigint",
		"UPDATE t SET a = 1 WHERE b = $1 AND t.writer_epoch OPERATOR(pg_catalog.<=) $2::bigint",
		"UPDATE t SET a = 1 WHERE (b = $1) AND t.writer_epoch < $2::bigint",
		"SELECT 1; SELECT 1",
		"SELECT 1",
		"SELECT ''",
		"SELECT false",
		"SELECT true",
		"SELECT NULL",
	}
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, out, _ := strings.Cut(string(data), "\n---- sent ----\n")
		texts = append(texts, in)
		if out = strings.TrimSpace(out); out != "PASS" && !strings.HasPrefix(out, "REFUSED") {
			texts = append(texts, out)
		}
	}
	trees := map[string]*pg.ParseResult{}
	for _, s := range texts {
		if tree, err := pgquery.Parse(s); err == nil {
			trees[s] = tree
		}
	}
	matches := 0
	for a, ta := range trees {
		for b, tb := range trees {
			want := Equal(ta.ProtoReflect(), tb.ProtoReflect())
			got, err := ParseMatches(ta, b, OutputLimit)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if got != want {
				t.Errorf("ParseMatches(%q, %q) = %v, Equal says %v", a, b, got, want)
			}
			if got {
				matches++
			}
		}
	}
	if matches <= len(trees) {
		t.Fatalf("only %d matches among %d texts: the test compares nothing but identities", matches, len(trees))
	}
}

// TestParseMatchesChangedTree: a tree changed in Go after parsing — a node added, a
// value changed, a list shortened — no longer matches its text.
func TestParseMatchesChangedTree(t *testing.T) {
	const text = "UPDATE t SET a = 1, b = $1 WHERE c = 'x' AND d"
	for name, change := range map[string]func(u *pg.UpdateStmt){
		"target added":   func(u *pg.UpdateStmt) { u.TargetList = append(u.TargetList, u.TargetList[0]) },
		"target dropped": func(u *pg.UpdateStmt) { u.TargetList = u.TargetList[:1] },
		"name changed":   func(u *pg.UpdateStmt) { u.TargetList[0].GetResTarget().Name = "z" },
		"param changed":  func(u *pg.UpdateStmt) { u.TargetList[1].GetResTarget().Val.GetParamRef().Number = 2 },
		"only":           func(u *pg.UpdateStmt) { u.Relation.Inh = false },
		"where dropped":  func(u *pg.UpdateStmt) { u.WhereClause = nil },
		"position moved": nil,
	} {
		tree, err := pgquery.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		u := tree.Stmts[0].Stmt.GetUpdateStmt()
		if change == nil {
			u.Relation.Location += 3
		} else {
			change(u)
		}
		got, err := ParseMatches(tree, text, OutputLimit)
		if err != nil {
			t.Fatal(err)
		}
		if got != (change == nil) {
			t.Errorf("%s: ParseMatches = %v", name, got)
		}
	}
}
