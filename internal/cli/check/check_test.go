package check

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

const checkPolicy = "testdata/policy.yaml"

// cli runs sqlfence check with args, as the program would.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, Run, args...)
}

// where lists findings as "file:line:col rule", the part of a finding a test pins.
func where(fs []finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d:%d %s", filepath.Base(f.File), f.Line, f.Column, f.Rule))
	}
	return out
}

func checkJSON(t *testing.T, args ...string) (result, int, string) {
	t.Helper()
	out, errOut, code := cli(t, append([]string{"--policy", checkPolicy, "--format", "json"}, args...)...)
	var res result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("check --format json printed something that is not JSON (%v):\n%s\nstderr:\n%s", err, out, errOut)
	}
	return res, code, errOut
}

func TestCheckSQLFiles(t *testing.T) {
	t.Parallel()
	res, code, errOut := checkJSON(t, "testdata/sql")
	if code != cmdutil.ExitFindings {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, cmdutil.ExitFindings, errOut)
	}
	want := []string{
		// 001_schema.sql is clean: DDL, seed rows that name the epoch column, reads,
		// unprotected tables, plain EXPLAIN, COPY TO.
		"002_maintenance.sql:15:1 SF801", // UPDATE without the fence
		"002_maintenance.sql:16:5 SF801", // DELETE without WHERE, indented
		"002_maintenance.sql:17:1 SF801", // <= on a strict table
		"002_maintenance.sql:18:1 SF801", // the comparison is under an OR
		"002_maintenance.sql:19:1 SF801", // INSERT without the epoch column
		"002_maintenance.sql:20:1 SF801", // INSERT without a column list
		"002_maintenance.sql:21:1 SF801", // DELETE in a data-modifying CTE
		"002_maintenance.sql:22:1 SF801", // MERGE without the fence
		"002_maintenance.sql:24:1 SF301", // TRUNCATE
		"002_maintenance.sql:25:1 SF302", // COPY FROM
		"002_maintenance.sql:26:1 SF410", // a listed function
		"002_maintenance.sql:28:9 SF801", // after a comment with non-ASCII text
		"003_suppressed.sql:4:1 SF803",
		"003_suppressed.sql:5:1 SF801", // not suppressed: no reason
		"003_suppressed.sql:7:1 SF804",
		"004_override.sql:9:1 SF801",  // after the override's transaction
		"004_override.sql:11:1 SF801", // the override's reason is too short
	}
	if got := where(res.Findings); !slices.Equal(got, want) {
		t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	wantSup := []string{"003_suppressed.sql:2:1 SF801", "003_suppressed.sql:12:1 SF301",
		"004_override.sql:5:1 SF801", "004_override.sql:6:1 SF801"}
	if got := where(res.Suppressed); !slices.Equal(got, wantSup) {
		t.Errorf("suppressed:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(wantSup, "\n  "))
	}
	if len(res.Suppressed) == 4 && (res.Suppressed[1].Reason != "restore from the nightly dump (INC-99)" ||
		res.Suppressed[2].Reason != "under sqlfence.override: recount after INC-1234") {
		t.Errorf("suppression reasons %q, %q", res.Suppressed[1].Reason, res.Suppressed[2].Reason)
	}
	if res.Files != 4 || res.Statements != 36 {
		t.Errorf("files %d statements %d, want 4 and 36", res.Files, res.Statements)
	}
	for _, f := range res.Findings {
		if f.Rule == "SF801" && (f.Table == "" || f.Statement == "" || f.EndLine < f.Line) {
			t.Errorf("finding without table, statement or end: %+v", f)
		}
	}
	first := res.Findings[0]
	clitest.WantContains(t, "message", first.Message, "UPDATE of protected table inventory bypasses the fence",
		"SET does not assign writer_epoch", "writer_epoch < <epoch>", "sqlfence:ignore <reason>")
	if first.Statement != "UPDATE inventory SET quantity = 0 WHERE sku = 'widget'" || first.EndColumn != len(first.Statement)+1 {
		t.Errorf("statement %q ends at column %d", first.Statement, first.EndColumn)
	}
	clitest.WantContains(t, "<= message", res.Findings[2].Message, "with <=", "strict mode")
	clitest.WantContains(t, "TRUNCATE message", res.Findings[8].Message, "TRUNCATE cannot be fenced")
}

func TestCheckCleanFileExitsZero(t *testing.T) {
	t.Parallel()
	out, errOut, code := cli(t, "--policy", checkPolicy, "testdata/sql/001_schema.sql")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	if out != "" {
		t.Errorf("stdout for a clean file: %q", out)
	}
	clitest.WantContains(t, "stderr", errOut, "0 findings in 1 file (8 statements checked)")
}

func TestCheckTextOutput(t *testing.T) {
	t.Parallel()
	// Flags may follow the paths.
	out, errOut, code := cli(t, "testdata/sql/002_maintenance.sql", "--policy", checkPolicy)
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "stdout", out,
		"testdata/sql/002_maintenance.sql:15:1: SF801: UPDATE of protected table inventory bypasses the fence",
		"\tUPDATE inventory SET quantity = 0 WHERE sku = 'widget'\n",
		"testdata/sql/002_maintenance.sql:24:1: SF301: cannot be fenced: TRUNCATE cannot be fenced")
	clitest.WantContains(t, "stderr", errOut, "sqlfence check: 12 findings in 1 file")
}

func TestCheckGoFiles(t *testing.T) {
	t.Parallel()
	res, code, errOut := checkJSON(t, "testdata/go")
	if code != cmdutil.ExitFindings {
		t.Fatalf("exit code %d; stderr: %s", code, errOut)
	}
	want := []string{
		"repo.go:32:37 SF301", // TRUNCATE through a constant built from constants
		"repo.go:36:3 SF303",  // assigns the epoch column: points into the raw string
		"repo.go:40:38 SF304", // INSERT without a column list
		"repo.go:46:19 SF306", // pgx Exec of two protected statements
		"repo.go:47:40 SF301", // pgx Prepare(ctx, name, sql)
		"repo.go:54:11 SF303", // pgx CopyFrom of rows with their own epoch (decided as the INSERT)
	}
	if got := where(res.Findings); !slices.Equal(got, want) {
		t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if got := where(res.Suppressed); !slices.Equal(got, []string{"repo.go:60:34 SF301"}) {
		t.Errorf("suppressed: %v", got)
	}
	clitest.WantContains(t, "message", res.Findings[1].Message, "the sqlfence driver refuses this statement", "assigns the epoch column writer_epoch")
	if res.Findings[1].Statement != "UPDATE inventory SET quantity = 0, writer_epoch = $2 WHERE sku = $1" {
		t.Errorf("statement %q", res.Findings[1].Statement)
	}
	// The _test.go file is checked only with --tests.
	res, _, _ = checkJSON(t, "--tests", "testdata/go")
	if !slices.Contains(where(res.Findings), "repo_test.go:10:22 SF301") {
		t.Errorf("--tests did not check repo_test.go: %v", where(res.Findings))
	}
	// --go=false leaves Go files in directories alone.
	out, errOut, code := cli(t, "--policy", checkPolicy, "--go=false", "testdata/go")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
}

func TestCheckSARIF(t *testing.T) {
	t.Parallel()
	out, errOut, code := cli(t, "--policy", checkPolicy, "--format", "sarif", "testdata/sql", "testdata/broken")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	// The parts of SARIF 2.1.0 code scanning reads. (The output also validates against
	// the OASIS sarif-schema-2.1.0.json.)
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID               string `json:"id"`
						HelpURI          string `json:"helpUri"`
						ShortDescription struct{ Text string }
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			ColumnKind string `json:"columnKind"`
			Results    []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn, EndLine, EndColumn int }
					}
				}
				Suppressions []struct{ Kind, Justification string }
			} `json:"results"`
			Invocations []struct {
				ExecutionSuccessful        bool
				ToolExecutionNotifications []struct {
					Level   string
					Message struct{ Text string }
				}
			} `json:"invocations"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-2.1.0") || len(log.Runs) != 1 {
		t.Fatalf("version %q schema %q runs %d", log.Version, log.Schema, len(log.Runs))
	}
	r := log.Runs[0]
	if r.Tool.Driver.Name != "sqlfence" || r.ColumnKind != "unicodeCodePoints" || len(r.Tool.Driver.Rules) < 40 {
		t.Errorf("tool %q columnKind %q rules %d", r.Tool.Driver.Name, r.ColumnKind, len(r.Tool.Driver.Rules))
	}
	if len(r.Results) != 21 { // 17 findings and 4 suppressed
		t.Errorf("%d results, want 21", len(r.Results))
	}
	suppressed := 0
	for _, res := range r.Results {
		if res.RuleIndex < 0 || res.RuleIndex >= len(r.Tool.Driver.Rules) || r.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result's ruleIndex %d does not name rule %q", res.RuleIndex, res.RuleID)
		} else if rule := r.Tool.Driver.Rules[res.RuleIndex]; !strings.HasSuffix(rule.HelpURI, "docs/errors.md#"+strings.ToLower(res.RuleID)) || rule.ShortDescription.Text == "" {
			t.Errorf("rule %s: helpUri %q, description %q", rule.ID, rule.HelpURI, rule.ShortDescription.Text)
		}
		loc := res.Locations[0].PhysicalLocation
		if !strings.HasPrefix(loc.ArtifactLocation.URI, "testdata/sql/") || loc.Region.StartLine < 1 || loc.Region.StartColumn < 1 || res.Message.Text == "" {
			t.Errorf("result without a usable location or message: %+v", res)
		}
		if len(res.Suppressions) > 0 {
			suppressed++
			if res.Suppressions[0].Kind != "inSource" || res.Suppressions[0].Justification == "" {
				t.Errorf("suppression %+v", res.Suppressions[0])
			}
		}
	}
	if suppressed != 4 {
		t.Errorf("%d suppressed results, want 4", suppressed)
	}
	inv := r.Invocations[0]
	if inv.ExecutionSuccessful || len(inv.ToolExecutionNotifications) != 1 || !strings.Contains(inv.ToolExecutionNotifications[0].Message.Text, "syntax error") {
		t.Errorf("the unparseable file is not reported as a failed execution: %+v", inv)
	}
}

func TestCheckBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unparseable SQL", []string{"--policy", checkPolicy, "testdata/broken"}, cmdutil.ExitError,
			[]string{`testdata/broken/broken.sql:2:23: error: syntax error at or near "quantity"`, "1 statement could not be parsed"}},
		{"nesting that could crash the parser", []string{"--policy", checkPolicy, "testdata/deep"}, cmdutil.ExitError,
			[]string{"deep.sql:1:171: error: nested or chained too deeply for the parser"}},
		{"missing policy file", []string{"--policy", filepath.Join(dir, "nope.yaml"), "testdata/sql"}, cmdutil.ExitError,
			[]string{"nope.yaml does not exist", "--policy"}},
		{"no policy at all", []string{"testdata/sql"}, cmdutil.ExitError,
			[]string{"no policy: give --policy PATH", "SQLFENCE_POLICY"}},
		{"broken policy", []string{"--policy", clitest.WriteFile(t, dir, "bad.yaml", "version: 1\ntables: []\n"), "testdata/sql"}, cmdutil.ExitError,
			[]string{"line 2", "tables is empty"}},
		{"no paths", []string{"--policy", checkPolicy}, cmdutil.ExitError, []string{"no PATH to check"}},
		{"missing path", []string{"--policy", checkPolicy, filepath.Join(dir, "missing")}, cmdutil.ExitError, []string{"no such file or directory"}},
		{"bad format", []string{"--policy", checkPolicy, "--format", "xml", "testdata/sql"}, cmdutil.ExitError, []string{"--format must be text, json or sarif"}},
		{"invalid UTF-8", []string{"--policy", checkPolicy, clitest.WriteFile(t, dir, "latin1.sql", "SELECT '\xe9';\n")}, cmdutil.ExitError, []string{"not valid UTF-8"}},
		{"unparseable Go", []string{"--policy", checkPolicy, clitest.WriteFile(t, dir, "bad.go", "package x\nfunc {\n")}, cmdutil.ExitError, []string{"bad.go: error: cannot parse Go source"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, tc.args...)
			clitest.WantCode(t, code, tc.code, out, errOut)
			clitest.WantContains(t, "stderr", errOut, tc.want...)
		})
	}
}

func TestCheckPolicyFromEnvironment(t *testing.T) {
	t.Setenv("SQLFENCE_POLICY", checkPolicy)
	out, errOut, code := cli(t, "testdata/sql/001_schema.sql")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
}

func TestCheckHandFencedShapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		sql    string
		fenced bool
	}{
		{"UPDATE inventory SET quantity = 1, writer_epoch = $1 WHERE sku = 'a' AND writer_epoch < $1", true},
		{"UPDATE inventory SET quantity = 1, writer_epoch = 7::bigint WHERE writer_epoch < 7::bigint", true},
		{"UPDATE inventory SET quantity = 1, writer_epoch = 7 WHERE 7 > writer_epoch", true},
		{"UPDATE inventory SET writer_epoch = (SELECT lease_epoch FROM jobs WHERE id = 1) WHERE writer_epoch < (SELECT lease_epoch FROM jobs WHERE id = 1)", true},
		{"UPDATE public.inventory SET quantity = 1, writer_epoch = 7 WHERE public.inventory.writer_epoch < 7", true},
		{"UPDATE inventory SET quantity = 1, writer_epoch = 8 WHERE writer_epoch < 7", false},                // different epochs
		{"UPDATE inventory SET quantity = 1, writer_epoch = writer_epoch + 1 WHERE writer_epoch < 9", false}, // not a claim's epoch
		{"UPDATE inventory SET quantity = 1 WHERE writer_epoch < 7", false},                                  // does not store it
		{"UPDATE inventory i SET quantity = 1, writer_epoch = i.writer_epoch WHERE i.writer_epoch < i.writer_epoch", false},
		{"UPDATE inventory SET quantity = 1, writer_epoch = 7 WHERE NOT (writer_epoch >= 7)", false},
		{"DELETE FROM inventory WHERE writer_epoch < $1", true},
		{"DELETE FROM inventory i USING jobs j WHERE j.id = 1 AND i.writer_epoch < j.lease_epoch", true},
		{"DELETE FROM inventory WHERE writer_epoch < quantity", false},
		{"UPDATE billing.invoices SET total = 1, writer_epoch = 4 WHERE writer_epoch <= 4", true}, // repeatable
		{"INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, 0, 3 FROM staging", true},
		{"INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 1, 3) ON CONFLICT DO NOTHING", true},
		{"INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 1, 3) ON CONFLICT (sku) DO UPDATE SET quantity = 1", false},
		{"MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND i.writer_epoch < 5 THEN UPDATE SET quantity = s.q, writer_epoch = 5 " +
			"WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, 5)", true},
		{"MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED AND i.writer_epoch < 5 THEN DELETE " +
			"WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)", false},
		{"CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE inventory SET quantity = 1, writer_epoch = 2 WHERE writer_epoch < 2; END", false},
		{"EXPLAIN ANALYZE DELETE FROM inventory", false},
	} {
		p := clitest.WriteFile(t, dir, "shape.sql", tc.sql+";\n")
		out, errOut, code := cli(t, "--policy", checkPolicy, p)
		if got := code == cmdutil.ExitOK; got != tc.fenced || code == cmdutil.ExitError {
			t.Errorf("%s\n  exit %d, want fenced=%v\n%s%s", tc.sql, code, tc.fenced, out, errOut)
		}
	}
}

func TestParseIgnore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		comment, reason string
		ok              bool
	}{
		{"-- sqlfence:ignore INC-1234 repair", "INC-1234 repair", true},
		{"--sqlfence:ignore   spaced out  ", "spaced out", true},
		{"-- sqlfence:ignore", "", true},
		{"/* sqlfence:ignore restore */", "restore", true},
		{"/*sqlfence:ignore*/", "", true},
		{"// sqlfence:ignore runbook 12", "runbook 12", true},
		{"/**\n * sqlfence:ignore multi-line\n */", "multi-line", true},
		{"-- see sqlfence:ignore in the README", "", false},
		{"-- sqlfence:ignored", "", false},
		{"-- sqlfence:ignore-next reason", "", false},
		{"-- nothing here", "", false},
	} {
		reason, ok := parseIgnore(tc.comment)
		if reason != tc.reason || ok != tc.ok {
			t.Errorf("parseIgnore(%q) = %q, %v; want %q, %v", tc.comment, reason, ok, tc.reason, tc.ok)
		}
	}
}

// TestCheckCascadesAndTriggers: what writes a protected table from inside the
// database is a finding where the .sql files show it: a foreign key that cascades into
// a protected table, a trigger on another table whose function (created in another
// file) writes one, a rule on another table that writes one.
func TestCheckCascadesAndTriggers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clitest.WriteFile(t, dir, "001_functions.sql", `CREATE FUNCTION restock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE inventory SET quantity = 100; RETURN NEW; END $$;
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.at := now(); RETURN NEW; END $$;
`)
	clitest.WriteFile(t, dir, "002_wiring.sql", `CREATE TABLE warehouse (id int PRIMARY KEY);
ALTER TABLE inventory ADD COLUMN wh int REFERENCES warehouse ON DELETE CASCADE;
ALTER TABLE inventory ADD CONSTRAINT inv_wh FOREIGN KEY (wh) REFERENCES warehouse ON UPDATE SET NULL;
ALTER TABLE inventory ADD CONSTRAINT inv_wh2 FOREIGN KEY (wh) REFERENCES warehouse ON DELETE RESTRICT;
CREATE TRIGGER notes_restock AFTER INSERT OR DELETE ON notes FOR EACH ROW EXECUTE FUNCTION restock();
CREATE TRIGGER notes_touch BEFORE UPDATE ON notes FOR EACH ROW EXECUTE FUNCTION touch();
CREATE RULE notes_purge AS ON DELETE TO notes DO ALSO DELETE FROM inventory;
`)
	res, _, errOut := checkJSON(t, dir)
	got := where(res.Findings)
	want := []string{
		"001_functions.sql:1:1 SF416", // the function that writes inventory
		"002_wiring.sql:2:1 SF402",    // ON DELETE CASCADE into inventory
		"002_wiring.sql:3:1 SF402",    // ON UPDATE SET NULL
		"002_wiring.sql:5:1 SF502",    // the trigger that runs it on notes
		"002_wiring.sql:7:1 SF801",    // the rule
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s\nstderr: %s", strings.Join(got, "\n"), strings.Join(want, "\n"), errOut)
	}
	for _, f := range res.Findings {
		if strings.Contains(f.Statement, "notes_restock") {
			clitest.WantContains(t, "trigger finding", f.Message, "the trigger notes_restock on notes runs restock(), which writes the protected table inventory",
				"every INSERT, DELETE of notes", "Fix: write inventory with statements of its own under an epoch")
		}
	}
}

// TestCheckKeepsGoing: a statement with a syntax error is reported, and every other
// statement of the file is still checked — the unfenced UPDATE before it and the
// TRUNCATE after it, through a routine body whose semicolons are its own.
func TestCheckKeepsGoing(t *testing.T) {
	t.Parallel()
	path := clitest.WriteFile(t, t.TempDir(), "typo.sql", `UPDATE inventory SET quantity = 0 WHERE sku = 'a';
UPDATE inventory SETT quantity = 1;
CREATE FUNCTION two() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END;
SELECT FROM WHERE;
-- sqlfence:ignore SF301 nightly reset of the demo data, under the guard override
TRUNCATE inventory;
TRUNCATE billing.invoices;
`)
	out, errOut, code := cli(t, "--policy", checkPolicy, path)
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	for _, want := range []string{
		"typo.sql:1:1: SF801: UPDATE of protected table inventory",
		"typo.sql:7:1: SF301: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		`typo.sql:2:23: error: syntax error at or near "quantity"`,
		"\tUPDATE inventory SETT quantity = 1\n",
		`typo.sql:4:13: error: syntax error at or near "WHERE"`,
		"2 findings, 1 suppressed in 1 file (4 statements checked); 2 statements could not be parsed",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out+errOut, "typo.sql:3:") {
		t.Errorf("the BEGIN ATOMIC body was split at its own semicolons:\n%s%s", out, errOut)
	}
}

// TestCheckGoQuestionMarks: a Go string with ? placeholders does not parse, but it is
// SQL the driver refuses (SF321); a string that is no statement stays skipped. A
// suppression that names a code covers only that code.
func TestCheckGoQuestionMarks(t *testing.T) {
	t.Parallel()
	path := clitest.WriteFile(t, t.TempDir(), "q.go", `package q

func f(db interface{ Query(string, ...any) (any, error); Exec(string, ...any) (any, error) }) {
	db.Query("SELECT * FROM inventory WHERE sku = ?", "a")
	db.Query("is it?")
	db.Query("SELECT data ?| array['a'] FROM staging")
	// sqlfence:ignore SF301 nightly reset of the demo data
	db.Exec("TRUNCATE inventory")
	// sqlfence:ignore SF303 the wrong code
	db.Exec("TRUNCATE billing.invoices")
	// sqlfence:ignore SF805 the Go analyzer's rule, not check's
	db.Exec("UPDATE inventory SET " + "quantity = 0")
}
`)
	res, code, errOut := checkJSON(t, path)
	if code != cmdutil.ExitFindings {
		t.Fatalf("exit code %d; stderr: %s", code, errOut)
	}
	want := []string{"q.go:4:11 SF321", "q.go:9:2 SF804", "q.go:10:10 SF301"}
	if got := where(res.Findings); !slices.Equal(got, want) {
		t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if got := where(res.Suppressed); !slices.Equal(got, []string{"q.go:8:10 SF301"}) {
		t.Errorf("suppressed: %v", got)
	}
}
