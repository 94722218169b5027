package analyzer_test

// The differential check: every statement of the core module's corpora, written into
// Go source as an application would write it, gets from the analyzer exactly the
// verdict the driver's engine (Policy.Plan) gives the statement's text. The Go forms
// rotate — a literal, a constant, a constant concatenation, fmt.Sprintf with a
// constant format, a local assigned once, a helper — and so do the database/sql
// methods, so that every statement also exercises the analyzer's reading of Go.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/contrib/analyzer"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// stmt is one statement of a corpus and where it came from.
type stmt struct {
	where, sql string
	// mayRefuse: the corpus lets the driver refuse it (benign: a known hole).
	mayRefuse bool
}

// verdict is the code the driver refuses a statement from application code with, ""
// when it sends it: Plan's refusal, or SF601 for a write to a claim table's epoch
// or status column, which only the claim helpers may send.
func verdict(pol *sqlfence.Policy, query string) string {
	plan := pol.Plan(query)
	var e *sqlfence.Error
	switch {
	case errors.As(plan.Err, &e):
		return e.Code
	case plan.Err != nil:
		return "SF???" // not sqlfence's error: no report can match it
	case plan.ClaimTable != "":
		return rulecode.ClaimWrite
	}
	return ""
}

// corpusStatements reads testdata/corpus/*.sql: entries start at `--! name:`, other
// `--!` lines are directives, and the rest up to the next entry is the statement.
func corpusStatements(t *testing.T, glob string) []stmt {
	t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) == 0 {
		t.Fatalf("no files match %s", glob)
	}
	var out []stmt
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cur *stmt
		var body []string
		template := false
		finish := func() {
			if cur != nil && !template {
				cur.sql = strings.Trim(strings.Join(body, "\n"), "\n")
				if strings.TrimSpace(cur.sql) != "" {
					out = append(out, *cur)
				}
			}
			cur, body, template = nil, nil, false
		}
		for i, line := range strings.Split(string(data), "\n") {
			directive, ok := strings.CutPrefix(line, "--! ")
			if !ok {
				if cur != nil {
					body = append(body, line)
				}
				continue
			}
			key, value, _ := strings.Cut(directive, ":")
			switch strings.TrimSpace(key) {
			case "name":
				finish()
				cur = &stmt{where: fmt.Sprintf("%s:%d (%s)", f, i+1, strings.TrimSpace(value))}
			case "setup":
				finish()
			case "template":
				template = true // a text/template of the core's attack suite, not SQL yet
			case "known_hole":
				if cur != nil {
					cur.mayRefuse = true
				}
			}
		}
		finish()
	}
	return out
}

// goldenStatements reads testdata/rewrite/*.sql: the statement before the separator.
func goldenStatements(t *testing.T) []stmt {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no files under testdata/rewrite")
	}
	var out []stmt
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, _, _ := strings.Cut(string(data), "\n---- sent ----\n")
		out = append(out, stmt{where: f, sql: in})
	}
	return out
}

// writeApplication writes the statements as the package corpus under dir/src, one
// database call a line, each with the // want comment its verdict calls for.
func writeApplication(t *testing.T, dir string, stmts []stmt, want func(stmt) string) {
	t.Helper()
	var consts, body strings.Builder
	calls := []string{"db.ExecContext(ctx, %s)", "tx.QueryContext(ctx, %s)", "conn.PrepareContext(ctx, %s)", "db.Exec(%s)", "db.QueryRow(%s)"}
	for i, s := range stmts {
		q := strconv.Quote(s.sql)
		var arg string
		switch i % 6 {
		case 0:
			arg = q
		case 1:
			fmt.Fprintf(&consts, "const q%d = %s\n", i, q)
			arg = fmt.Sprintf("q%d", i)
		case 2:
			half := len(s.sql) / 2
			arg = strconv.Quote(s.sql[:half]) + " + " + strconv.Quote(s.sql[half:])
		case 3:
			fmt.Fprintf(&consts, "const q%d = %s\n", i, q)
			arg = fmt.Sprintf(`fmt.Sprintf("%%s", q%d)`, i)
		case 4:
			fmt.Fprintf(&body, "\tv%d := %s\n", i, q)
			arg = fmt.Sprintf("v%d", i)
		case 5:
			arg = fmt.Sprintf("same(%s)", q)
		}
		fmt.Fprintf(&body, "\t// %s\n\t"+calls[i%len(calls)], strings.ReplaceAll(s.where, "\n", " "), arg)
		if w := want(s); w != "" {
			fmt.Fprintf(&body, " // want `^%s: `", w)
		}
		body.WriteString("\n")
	}
	src := "package corpus\n\nimport (\n\t\"context\"\n\t\"database/sql\"\n\t\"fmt\"\n)\n\nvar _ = fmt.Sprintf\n\n" + consts.String() +
		"\nfunc same(s string) string { return s }\n\nfunc run(ctx context.Context, db *sql.DB, tx *sql.Tx, conn *sql.Conn) {\n" + body.String() + "}\n"
	pkg := filepath.Join(dir, "src", "corpus")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "corpus.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func loadPolicy(t *testing.T, path string) *sqlfence.Policy {
	t.Helper()
	pol, err := sqlfence.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestAgreesWithPlan: the differential corpus under its policy, and the rewrite
// golden files under the core's test policy.
func TestAgreesWithPlan(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		stmts        func(*testing.T) []stmt
	}{
		{"corpus", "../../testdata/corpus/policy.yaml", func(t *testing.T) []stmt { return corpusStatements(t, "../../testdata/corpus/*.sql") }},
		{"rewrite", "../../testdata/sqlfence.yaml", goldenStatements},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := loadPolicy(t, tc.policy)
			stmts := tc.stmts(t)
			refused := 0
			dir := t.TempDir()
			writeApplication(t, dir, stmts, func(s stmt) string {
				v := verdict(pol, s.sql)
				if v != "" {
					refused++
				}
				return v
			})
			analysistest.Run(t, dir, analyzer.New(pol), "corpus")
			t.Logf("%d statements, %d refused by the driver and reported", len(stmts), refused)
			if len(stmts) < 40 || refused < 10 {
				t.Fatalf("only %d statements (%d refused): the corpus is no longer read", len(stmts), refused)
			}
		})
	}
}

// TestBenignCorpus: the ordinary statements ORMs, query builders and sqlc send are
// reported only where the driver itself refuses them today (a known hole).
func TestBenignCorpus(t *testing.T) {
	pol, err := sqlfence.ParsePolicy([]byte(benignPolicy), "<benign>")
	if err != nil {
		t.Fatal(err)
	}
	// Files under `--! policy: catalog` pass the driver only with the catalog (an
	// extension's own functions, a materialized view's query): the analyzer decides
	// from the text alone, as the driver does under resolve: none, so they are not
	// this test's; TestBenignCorpusCatalog decides them with -dsn.
	files, _ := filepath.Glob("../../testdata/benign/*.sql")
	var stmts []stmt
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "\n--! policy: catalog") {
			continue // also "catalog ddl": DDL under ddl: allow, which this policy denies
		}
		stmts = append(stmts, corpusStatements(t, f)...)
	}
	dir := t.TempDir()
	holes := 0
	writeApplication(t, dir, stmts, func(s stmt) string {
		if !s.mayRefuse {
			return "" // any report fails the test
		}
		v := verdict(pol, s.sql)
		if v != "" {
			holes++
		}
		return v
	})
	analysistest.Run(t, dir, analyzer.New(pol), "corpus")
	t.Logf("benign corpus: %d statements, %d refused by the driver today (known holes)", len(stmts), holes)
	if len(stmts) < 50 {
		t.Fatalf("only %d statements: the benign corpus is no longer read", len(stmts))
	}
}

// benignPolicy is the core's benign-corpus policy (benign_test.go): the attack
// suite's tables and the functions the corpus's schema defines.
const benignPolicy = `version: 1
tables:
  - name: inventory
  - name: billing.invoices
    mode: repeatable
  - name: reports
    epoch_column: fence_epoch
functions:
  - billing.recalc
claims:
  - table: jobs
safe_functions: [user_count, stock_of, slug]
`
