package engine

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/rewrite")

// goldenSeparator divides a golden file into the application's statement and what
// sqlfence does with it: the text sent, "PASS" (sent unchanged) or "REFUSED: reason".
const goldenSeparator = "\n---- sent ----\n"

// TestRewriteGolden checks every file under testdata/rewrite: the statement before the
// separator, the outcome after it. Run with -update to regenerate after a deliberate
// change, then read the diff.
func TestRewriteGolden(t *testing.T) {
	p := testPolicy(t)
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".sql"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in, want, _ := strings.Cut(string(data), goldenSeparator)
			got := outcome(Analyze(p, in))
			if *update {
				if err := os.WriteFile(file, []byte(in+goldenSeparator+got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if strings.TrimSuffix(want, "\n") != got {
				t.Errorf("statement:\n%s\nsent:\n%s\nwant:\n%s", in, got, want)
			}
		})
	}
}

func outcome(d *Decision) string {
	switch d.act {
	case ActPass:
		return "PASS"
	case ActRefuse:
		return "REFUSED: " + d.refusal.Error()
	case ActClaim:
		return "CLAIM HELPERS ONLY: " + d.claimTable.QualifiedName.String()
	}
	return d.sql
}

// TestParserBounds: these inputs crash the C parser (stack overflow kills the process)
// or exhaust it; each must come back as a refusal instead.
func TestParserBounds(t *testing.T) {
	p := testPolicy(t)
	const n = 200_000
	for name, q := range map[string]string{
		"operators": "UPDATE inventory SET quantity = " + strings.Repeat("1+", n) + "1",
		"is null":   "UPDATE inventory SET quantity = 1 WHERE note" + strings.Repeat(" IS NOT NULL", n),
		"casts":     "UPDATE inventory SET quantity = 1" + strings.Repeat("::int", n),
		"collate":   "UPDATE inventory SET note = 'a'" + strings.Repeat(` COLLATE "C"`, n),
		"parens":    "UPDATE inventory SET quantity = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"not":       "UPDATE inventory SET quantity = 1 WHERE " + strings.Repeat("NOT ", n) + "true",
		"huge":      "UPDATE inventory SET note = '" + strings.Repeat("x", 2<<20) + "'",
	} {
		d := Analyze(p, q)
		if d.act != ActRefuse {
			t.Errorf("%s: decision %v, want a refusal", name, d.act)
		}
	}
}

// TestDecideConcurrent runs the parser from many goroutines at once; with -race it
// also checks that decisions share no mutable state.
func TestDecideConcurrent(t *testing.T) {
	p := testPolicy(t)
	done := make(chan string)
	for g := range 16 {
		go func() {
			for i := range 20 {
				q := "UPDATE inventory SET quantity = " + strings.Repeat("1+", g+i) + "1 WHERE sku = $1"
				if d := Analyze(p, q); d.act != ActRewrite {
					done <- q
					return
				}
			}
			done <- ""
		}()
	}
	for range 16 {
		if q := <-done; q != "" {
			t.Errorf("not rewritten: %.60s", q)
		}
	}
}

// TestRewriteGoldenClaim checks the claim-checked rewrites under testdata/rewrite_claim:
// each statement as sent under a claim on jobs(id, lease_epoch), with the policy's
// stale: row and with every table under stale: claim.
func TestRewriteGoldenClaim(t *testing.T) {
	p := testPolicy(t)
	pc := *p
	pc.Tables = append([]Table(nil), p.Tables...)
	for i := range pc.Tables {
		pc.Tables[i].Stale = StaleClaim
	}
	pc.tables = nil
	cc := NewClaimCheck("jobs", "id", "lease_epoch", int64(1))
	files, _ := filepath.Glob("../../testdata/rewrite_claim/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	const staleClaim = "\n---- sent, stale: claim ----\n"
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".sql"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in, want, _ := strings.Cut(string(data), goldenSeparator)
			got := outcome(analyzeWith(p, in, cc)) + staleClaim + outcome(analyzeWith(&pc, in, cc))
			if *update {
				if err := os.WriteFile(file, []byte(in+goldenSeparator+got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if strings.TrimSuffix(want, "\n") != got {
				t.Errorf("statement:\n%s\nsent:\n%s\nwant:\n%s", in, got, want)
			}
		})
	}
}
