// Package clitest has the helpers the sqlfence subcommands' tests share: run a
// subcommand as the program would, check its exit code and output, and a server
// that never answers. Only tests import it.
package clitest

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Command is a subcommand's entry point, as cmd/sqlfence dispatches to it.
type Command func(args []string, stdout, stderr io.Writer) int

// Run runs a subcommand with args (without its name) as the program would, and
// returns its output and exit code.
func Run(t testing.TB, cmd Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cmd(args, &out, &errb)
	return out.String(), errb.String(), code
}

// WantCode fails the test when an exit code is not the one it wants, showing the
// output.
func WantCode(t *testing.T, got, want int, stdout, stderr string) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", got, want, stdout, stderr)
	}
}

// WantContains reports each of subs that s, named what, does not contain.
func WantContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// SilentServer is a DSN for a server that accepts connections and never answers:
// the "database that does not answer" case, without waiting for a network timeout.
func SilentServer(t *testing.T) string {
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

// WriteFile writes content to dir/name, creating directories as needed, and
// returns its path.
func WriteFile(t testing.TB, dir, name, content string) string {
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

// PGConnect opens a plain pgx connection with extra startup parameters, closed when
// the test ends.
func PGConnect(t testing.TB, dsn string, params map[string]string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range params {
		cfg.RuntimeParams[k] = v
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
