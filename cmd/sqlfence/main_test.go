package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) {
	// The demo re-executes its own binary as its workers; under go test that binary
	// is this test binary, so it has to be able to be a worker too.
	if len(os.Args) > 1 && os.Args[1] == workerCommand {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	pgtest.Main(m)
}

// sqlfence runs the command as main would, and returns its output and exit code.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func wantCode(t *testing.T, got, want int, stdout, stderr string) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", got, want, stdout, stderr)
	}
}

func wantContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// silentServer is a DSN for a server that accepts connections and never answers:
// the "database that does not answer" case, without waiting for a network timeout.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "postgres://app@" + l.Addr().String() + "/app?sslmode=disable"
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUsage(t *testing.T) {
	t.Parallel()
	out, errOut, code := cli(t)
	wantCode(t, code, exitError, out, errOut)
	wantContains(t, "stderr", errOut, "Usage:", "demo", "check", "guard", "audit")
	if strings.Contains(errOut, workerCommand) {
		t.Errorf("usage lists the hidden %s command", workerCommand)
	}

	out, errOut, code = cli(t, "frobnicate")
	wantCode(t, code, exitError, out, errOut)
	wantContains(t, "stderr", errOut, `unknown command "frobnicate"`)

	out, errOut, code = cli(t, "--help")
	wantCode(t, code, exitOK, out, errOut)
	wantContains(t, "stdout", out, "go run ./cmd/sqlfence demo")

	for _, cmd := range []string{"demo", "check", "guard", "audit"} {
		out, errOut, code := cli(t, cmd, "--help")
		wantCode(t, code, exitOK, out, errOut)
		wantContains(t, cmd+" --help", out, "Usage: sqlfence "+cmd, "Exit status", "Flags:\n  --")
		out2, _, code := cli(t, "help", cmd)
		if code != exitOK || out2 != out {
			t.Errorf("sqlfence help %s differs from sqlfence %s --help", cmd, cmd)
		}
		out, errOut, code = cli(t, cmd, "--no-such-flag")
		wantCode(t, code, exitError, out, errOut)
		wantContains(t, cmd+" with a bad flag", errOut, "no-such-flag", "--help")
	}
}

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

// checkDir is where the binary runs in TestBinary: the check package's directory,
// where its test files are.
const checkDir = "../../internal/cli/check"

// checkPolicy is the policy of the check package's test files, relative to checkDir.
const checkPolicy = "testdata/policy.yaml"

// runBinary runs the built binary in checkDir and returns its output and exit code.
func runBinary(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
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

// pgConnect opens a plain pgx connection, closed when the test ends.
func pgConnect(t *testing.T, dsn string, params map[string]string) *pgx.Conn {
	return clitest.PGConnect(t, dsn, params)
}
