package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestDriverAndLinterAgree runs the driver's judgement (Policy.Plan) and the linter's
// (protectedWrites) over every statement of the driver's golden files and differential
// corpus, and fails where they disagree on whether a statement writes a protected
// table: a write the linter sees must never be sent unchanged by the driver, and every
// table the driver fences must be one the linter sees written.
func TestDriverAndLinterAgree(t *testing.T) {
	root := filepath.Join("..", "..", "..", "testdata")
	pol, err := sqlfence.LoadPolicy(filepath.Join(root, "sqlfence.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	golden, _ := filepath.Glob(filepath.Join(root, "rewrite", "*.sql"))
	for _, f := range golden {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, _, _ := strings.Cut(string(data), "---- sent ----")
		stmts = append(stmts, strings.TrimSpace(in))
	}
	corpus, _ := filepath.Glob(filepath.Join(root, "corpus", "*.sql"))
	for _, f := range corpus {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range strings.Split(string(data), "--! name:")[1:] {
			var body []string
			for _, line := range strings.Split(entry, "\n")[1:] {
				if !strings.HasPrefix(line, "--!") {
					body = append(body, line)
				}
			}
			stmts = append(stmts, strings.TrimSpace(strings.Join(body, "\n")))
		}
	}
	if len(stmts) < 100 {
		t.Fatalf("only %d statements found; the corpus moved?", len(stmts))
	}
	for _, q := range stmts {
		tree, err := pgquery.Parse(q)
		if err != nil {
			continue
		}
		var linted []string
		for _, raw := range tree.Stmts {
			ws, _ := protectedWrites(pol, raw.Stmt)
			for _, w := range ws {
				if w.in == "" && !slices.Contains(linted, w.table.QualifiedName.String()) {
					linted = append(linted, w.table.QualifiedName.String())
				}
			}
		}
		plan := pol.Plan(q)
		switch {
		case len(linted) > 0 && plan.Err == nil && plan.Fenced == "":
			t.Errorf("the linter sees %v written, the driver sends it unchanged:\n%s", linted, q)
		case plan.Fenced != "":
			for _, table := range plan.Tables {
				if !slices.Contains(linted, table) {
					t.Errorf("the driver fences %s, the linter sees no write of it (%v):\n%s", table, linted, q)
				}
			}
		}
	}
}
