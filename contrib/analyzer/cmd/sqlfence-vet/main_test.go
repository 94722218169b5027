package main

// The command as users run it, on the example module of docs/analyzer.md (testdata/example):
// as a vet tool, on its own with -json, and with -sarif.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/govet.txt, which docs/analyzer.md shows, with what go vet prints")

func buildTool(t *testing.T) (bin, example string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin = filepath.Join(t.TempDir(), "sqlfence-vet")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	example, err := filepath.Abs("../../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	return bin, example
}

// run runs name in dir and returns its output and exit code.
func run(t *testing.T, dir, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errOut.String(), code
}

func TestVetTool(t *testing.T) {
	bin, example := buildTool(t)
	policy := filepath.Join(example, "sqlfence.yaml")

	_, stderr, code := run(t, example, "go", "vet", "-vettool="+bin, "-policy="+policy, "./...")
	if code == 0 || !strings.Contains(stderr, "shop.go:18:12: SF301: ") || !strings.Contains(stderr, "shop.go:23:12: SF805: ") ||
		strings.Contains(stderr, "shop.go:13") {
		t.Errorf("go vet -vettool: exit %d, want the SF301 and SF805 reports only:\n%s", code, stderr)
	}
	// docs/analyzer.md shows it as the user types it.
	golden := "testdata/govet.txt"
	vet := "$ go vet -vettool=$(which sqlfence-vet) -policy=$PWD/sqlfence.yaml ./...\n" + stderr
	if *update {
		if err := os.WriteFile(golden, []byte(vet), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(golden); err != nil || string(want) != vet {
		t.Errorf("go vet printed\n%s\nwant (%s; go test -update refreshes it, then go test ./internal/readme -update the docs)\n%s", vet, golden, want)
	}

	stdout, stderr, code := run(t, example, bin, "-policy", policy, "-json", "./...")
	var js map[string]map[string][]struct{ Category, Posn, Message string }
	if err := json.Unmarshal([]byte(stdout), &js); err != nil {
		t.Fatalf("-json: %v\n%s%s", err, stdout, stderr)
	}
	got := js["example.com/shop"]["sqlfence"]
	if len(got) != 2 || got[0].Category != "SF301" || got[1].Category != "SF805" {
		t.Errorf("-json: exit %d, reports %+v", code, got)
	}

	stdout, stderr, code = run(t, example, bin, "-policy", policy, "-sarif", "./...")
	var log struct {
		Version string
		Runs    []struct {
			Results []struct {
				RuleID    string
				Level     string
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &log); err != nil || len(log.Runs) != 1 {
		t.Fatalf("-sarif: %v\n%s%s", err, stdout, stderr)
	}
	res := log.Runs[0].Results
	if code != 1 || len(res) != 2 || res[0].RuleID != "SF301" || res[0].Level != "error" || res[1].RuleID != "SF805" || res[1].Level != "warning" {
		t.Fatalf("-sarif: exit %d, results %+v", code, res)
	}
	if loc := res[0].Locations[0].PhysicalLocation; loc.ArtifactLocation.URI != "shop.go" || loc.Region.StartLine != 18 || loc.Region.StartColumn != 12 {
		t.Errorf("-sarif: SF301 at %+v, want shop.go:18:12", loc)
	}

	t.Setenv("SQLFENCE_POLICY", "")
	_, stderr, code = run(t, example, bin, "./...")
	if code == 0 || !strings.Contains(stderr, "no policy: give -policy PATH") {
		t.Errorf("without a policy: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestRepositoryExamples: every example of the repository, under its own policy,
// draws no report — sqlc's and sqlc's pgx generated code included, and the
// migrations on plain handles suppressed with their reasons.
func TestRepositoryExamples(t *testing.T) {
	bin, _ := buildTool(t)
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	policies, err := filepath.Glob(filepath.Join(root, "examples", "*", "sqlfence.yaml"))
	if err != nil || len(policies) < 5 {
		t.Fatalf("the examples' policies: %v %v", policies, err)
	}
	for _, policy := range policies {
		ex := filepath.Base(filepath.Dir(policy))
		stdout, stderr, code := run(t, root, bin, "-policy", policy, "./examples/"+ex+"/...")
		if code != 0 || stdout != "" || stderr != "" {
			t.Errorf("examples/%s: exit %d\n%s%s", ex, code, stdout, stderr)
		}
	}
}
