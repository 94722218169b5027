package sqlfence

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/rewrite")

func testPolicy(tb testing.TB) *Policy {
	tb.Helper()
	p, err := LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// goldenSeparator divides a golden file into the application's statement and what
// sqlfence does with it: the text sent, "PASS" (sent unchanged) or "REFUSED: reason".
const goldenSeparator = "\n---- sent ----\n"

// TestRewriteGolden checks every file under testdata/rewrite: the statement before the
// separator, the outcome after it. Run with -update to regenerate after a deliberate
// change, then read the diff.
func TestRewriteGolden(t *testing.T) {
	p := testPolicy(t)
	needles := needlesOf(p)
	files, _ := filepath.Glob("testdata/rewrite/*.sql")
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
			got := outcome(decide(p, needles, in))
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

func outcome(d *decision) string {
	switch d.act {
	case actPass:
		return "PASS"
	case actRefuse:
		return "REFUSED: " + d.refusal.Error()
	}
	return d.sql
}
