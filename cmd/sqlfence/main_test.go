package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/cli/demo"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var update = flag.Bool("update", false, "rewrite the golden outputs in testdata (which the README and docs/ show) with what the commands print")

// demoVaries matches what differs between two runs of the demo: the server's
// version and the timings.
var demoVaries = regexp.MustCompile(`PostgreSQL \d+(\.\d+)?|\d+\.\ds`)

// wantGolden compares a command's output with the golden file the docs show,
// except for what varies matches; -update rewrites the file with this run's output.
func wantGolden(t *testing.T, file, got string, varies *regexp.Regexp) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if varies == nil {
		varies = regexp.MustCompile(`$^`) // nothing varies
	}
	if varies.ReplaceAllString(got, "…") != varies.ReplaceAllString(string(want), "…") {
		t.Errorf("printed\n%s\nwant (%s; go test -update refreshes it, then go test ./internal/readme -update the docs)\n%s", got, file, want)
	}
}

// cli runs the program with args, as main would, and returns its output and exit
// code.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, run, args...)
}

func TestUsage(t *testing.T) {
	t.Parallel()
	out, errOut, code := cli(t)
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, "Usage:", "demo", "check", "guard", "audit", "version")
	if strings.Contains(errOut, demo.WorkerCommand) {
		t.Errorf("usage lists the hidden %s command", demo.WorkerCommand)
	}

	out, errOut, code = cli(t, "frobnicate")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, `unknown command "frobnicate"`)

	out, errOut, code = cli(t, "--help")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "stdout", out, "go run ./cmd/sqlfence demo",
		"  version print the versions of sqlfence, pg_query_go and its PostgreSQL parser\n")

	want, _, _ := cli(t, "version")
	for _, flag := range []string{"--version", "-version"} {
		out, errOut, code = cli(t, flag)
		clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
		if out != want || !strings.HasPrefix(out, "sqlfence ") {
			t.Errorf("sqlfence %s printed %q, want what sqlfence version prints, %q", flag, out, want)
		}
	}

	for _, cmd := range []string{"demo", "check", "guard", "audit", "doctor", "version"} {
		out, errOut, code := cli(t, cmd, "--help")
		clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
		clitest.WantContains(t, cmd+" --help", out, "Usage: sqlfence "+cmd, "Exit status")
		if cmd != "version" { // the one command without flags
			clitest.WantContains(t, cmd+" --help", out, "Flags:\n  --")
		}
		out2, _, code := cli(t, "help", cmd)
		if code != cmdutil.ExitOK || out2 != out {
			t.Errorf("sqlfence help %s differs from sqlfence %s --help", cmd, cmd)
		}
		out, errOut, code = cli(t, cmd, "--no-such-flag")
		clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
		clitest.WantContains(t, cmd+" with a bad flag", errOut, "no-such-flag", "--help")
	}
}

// TestReadmeCheck runs the sqlfence check example of docs/cli.md on the files in
// testdata/readme and keeps what it prints, command line first, in
// testdata/readme/check.txt, which docs/cli.md shows.
func TestReadmeCheck(t *testing.T) {
	t.Chdir("testdata/readme")
	args := []string{"check", "--policy", "sqlfence.yaml", "migrations", "scripts"}
	out, errOut, code := cli(t, args...)
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	wantGolden(t, "check.txt", "$ sqlfence "+strings.Join(args, " ")+"\n"+out+errOut, nil)
}

// TestNoTestingInBinary keeps package testing out of the shipped command: linked in,
// it registers its -test.* flags and brings test-only code (internal/pgtest) along.
func TestNoTestingInBinary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	var deps, importers []string
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), ": ")
		deps = append(deps, pkg)
		if slices.Contains(strings.Fields(imports), "testing") {
			importers = append(importers, pkg)
		}
	}
	if !slices.Contains(deps, "github.com/sqlfence/sqlfence/internal/cli/check") {
		t.Fatalf("go list -deps does not list the command's own packages:\n%s", out)
	}
	if slices.Contains(deps, "testing") {
		t.Errorf("cmd/sqlfence links package testing, imported by %s", strings.Join(importers, ", "))
	}
}

// checkDir is where the binary runs in TestBinary: the check package's directory,
// where its test files are.
const checkDir = "../../internal/cli/check"

// checkPolicy is the policy of the check package's test files, relative to checkDir.
const checkPolicy = "testdata/policy.yaml"

// buildBinary builds the command into the test's temporary directory, for the
// tests that run sqlfence exactly as a user does.
func buildBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sqlfence")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// runBinary runs the built binary in checkDir and returns its output and exit code.
func runBinary(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	// The demo's four workers are processes of their own, and with the
	// WebAssembly parser each compiles it first: on a loaded 2-core machine that
	// alone has taken most of two minutes.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = checkDir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// TestBinary runs the built command the way the README tells a user to.
func TestBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)

	t.Run("demo", func(t *testing.T) {
		// The README's first command, with a throwaway PostgreSQL of its own — unless
		// the tests were pointed at an existing server.
		args := []string{"demo"}
		if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
			args = append(args, "--dsn", pgtest.NewDB(t))
		}
		out, errOut, code := runBinary(t, bin, nil, args...)
		clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
		clitest.WantContains(t, "demo", out,
			"plain pgx", "sqlfence",
			"A is paused (SIGSTOP)",
			"wrote 7", "FENCED: row has epoch 3 > 1",
			"final count                           7                              5",
			"LOST UPDATE (+2 widgets)",
			"sqlfence prevented the lost update.")
		wantGolden(t, "testdata/demo.txt", out, demoVaries)
	})
	t.Run("check", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "check", "--policy", checkPolicy, "testdata/sql", "testdata/go")
		clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
		clitest.WantContains(t, "check", out, "testdata/sql/002_maintenance.sql:15:1: SF801:", "testdata/go/repo.go:32:37: SF301:")
		out, errOut, code = runBinary(t, bin, []string{"SQLFENCE_POLICY="}, "check", "testdata/sql")
		clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
		clitest.WantContains(t, "check without a policy", errOut, "no policy")
		out, errOut, code = runBinary(t, bin, nil, "check", "--policy", checkPolicy, "testdata/broken/broken.sql")
		clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
		clitest.WantContains(t, "check of an unparseable file", errOut, "broken.sql:2:23: error: syntax error")
	})
	t.Run("guard", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "guard", "--policy", checkPolicy)
		clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
		clitest.WantContains(t, "guard", out, "sqlfence.install_guard(NULL, 'inventory', 'writer_epoch', true)")
		out, errOut, code = runBinary(t, bin, nil, "guard", "--policy", checkPolicy, "--apply", "--dsn", clitest.SilentServer(t), "--connect-timeout", "1s")
		clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
		clitest.WantContains(t, "guard with a silent server", errOut, "cannot connect")
	})
	t.Run("version", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "version")
		clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
		// A binary built from this checkout is (devel), or a pseudo-version when the
		// go command stamps version control information; pg_query_go is the version
		// go.mod selects.
		pgq, err := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Version}}", "github.com/pganalyze/pg_query_go/v6").Output()
		if err != nil {
			t.Fatalf("go list -m: %v", err)
		}
		// The parser build linked follows CGO_ENABLED.
		want := regexp.MustCompile(`^sqlfence (\(devel\)|v\S+)\n(pg_query_go ` + regexp.QuoteMeta(strings.TrimSpace(string(pgq))) + ` \(cgo\)|go-pgquery \S+ \(wasm\))` +
			`, with the PostgreSQL 17\.\d+ parser\nbuilt with go\S+ for \S+/\S+\n$`)
		if !want.MatchString(out) {
			t.Errorf("sqlfence version printed:\n%s\nwant it to match %s", out, want)
		}
	})
	t.Run("audit", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "audit", "--policy", checkPolicy, "--dsn", clitest.SilentServer(t), "--connect-timeout", "1s")
		clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
		clitest.WantContains(t, "audit with a silent server", errOut, "cannot connect")
	})
}
