// Package pgtest runs throwaway PostgreSQL clusters for tests and demos.
//
// sqlfence's behavior depends on what a real server accepts, rejects and
// locks, so tests talk to a real PostgreSQL rather than a mock. Starting a
// cluster takes a second or two, too slow to pay per test, while a shared
// database lets tests see each other's tables. So each test binary starts at
// most one cluster and each test gets its own database created from
// template0, which is cheap and, unlike template1, can be copied by many
// parallel tests at once because nobody may connect to it:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		dsn := pgtest.NewDB(t)
//		...
//	}
//
// Setting SQLFENCE_TEST_DSN to a superuser DSN uses that server instead, for
// machines without the PostgreSQL server installed.
//
// The cluster trades durability for speed (fsync, synchronous_commit and
// full_page_writes are off): its data is discarded on Stop anyway.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable that points tests at an existing
// server instead of a throwaway cluster.
const EnvDSN = "SQLFENCE_TEST_DSN"

// ErrNoServer reports that no PostgreSQL server binaries are installed. It is
// the one failure that says nothing about the code under test, so callers may
// treat it as a reason to skip rather than fail.
var ErrNoServer = errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) found in PATH or /usr/lib/postgresql/*/bin; install the PostgreSQL server or set " + EnvDSN)

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
	bindAttempts = 5
)

// Cluster is a running throwaway PostgreSQL server. Stop it to free its port
// and delete its data.
type Cluster struct {
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returns
	err    error         // result of cmd.Wait, valid after exited is closed

	stopOnce sync.Once
	stopErr  error
}

// account is the OS user the server runs as when this process is root.
type account struct{ uid, gid int }

// Start initializes a new cluster in a temporary directory and starts a server
// on a free loopback port. ctx bounds only the startup; the server runs until
// Stop or until this process dies.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	// initdb and postgres refuse to run as root, because a compromised server
	// would then own the machine.
	var runAs *account
	if os.Geteuid() == 0 {
		if runAs, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c, err := start(ctx, bin, dir, runAs)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func start(ctx context.Context, bin, dir string, runAs *account) (*Cluster, error) {
	attr, err := sysProcAttr(runAs)
	if err != nil {
		return nil, err
	}
	if runAs != nil {
		if err := os.Chown(dir, runAs.uid, runAs.gid); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir, initdb.SysProcAttr = dir, attr
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, tail(out))
	}

	// Picking a free port and binding it later is racy, so a bind failure is
	// retried with a fresh port rather than reported.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		c, err := launch(ctx, bin, dir, port, attr)
		if err == nil || attempt == bindAttempts || !errors.Is(err, errBind) {
			return c, err
		}
	}
}

var errBind = errors.New("could not bind port")

func launch(ctx context.Context, bin, dir string, port int, attr *syscall.SysProcAttr) (*Cluster, error) {
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	defer logFile.Close() // the child has its own copy

	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "logging_collector=off",
	)
	cmd.Dir, cmd.SysProcAttr = dir, attr
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c := &Cluster{dir: dir, port: port, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()

	if err := c.waitReady(ctx); err != nil {
		c.shutdown()
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte("could not bind")) || bytes.Contains(log, []byte("could not create any TCP/IP sockets")) {
			err = fmt.Errorf("%w %d: %v", errBind, port, err)
		}
		return nil, fmt.Errorf("pgtest: postgres did not become ready: %w\n%s", err, tail(log))
	}
	return c, nil
}

// waitReady connects through the Unix socket in the cluster's own directory,
// so a foreign server that grabbed the port cannot be mistaken for ours.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	socketDSN := fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=2", c.dir, c.port)
	for {
		conn, err := pgx.Connect(ctx, socketDSN)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited: %v", c.err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DSN returns a URL for the postgres superuser's maintenance database.
func (c *Cluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Stop shuts the server down and deletes its data directory. It is safe to
// call more than once and from several goroutines.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = errors.Join(c.shutdown(), os.RemoveAll(c.dir))
	})
	return c.stopErr
}

func (c *Cluster) shutdown() error {
	// SIGINT is postgres' fast shutdown: it disconnects clients instead of
	// waiting for them, which is what a test process on its way out wants.
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
		if c.err != nil {
			return fmt.Errorf("pgtest: postgres: %w", c.err)
		}
		return nil
	case <-time.After(stopTimeout):
		c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("pgtest: postgres ignored SIGINT for %v and was killed", stopTimeout)
	}
}

// CreateDatabase creates an empty database with a unique name on the server
// behind adminDSN and returns a DSN for it that differs from adminDSN only in
// the database name. drop removes the database, disconnecting any clients the
// caller forgot to close.
func CreateDatabase(ctx context.Context, adminDSN string) (dsn string, drop func(context.Context) error, err error) {
	var b [8]byte
	rand.Read(b[:])
	name := "sqlfence_test_" + hex.EncodeToString(b[:])
	if dsn, err = withDatabase(adminDSN, name); err != nil {
		return "", nil, err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := execAdmin(ctx, adminDSN, "CREATE DATABASE "+ident+" TEMPLATE template0"); err != nil {
		return "", nil, err
	}
	drop = func(ctx context.Context) error {
		return execAdmin(ctx, adminDSN, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	}
	return dsn, drop, nil
}

func execAdmin(ctx context.Context, adminDSN, sql string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// withDatabase rewrites dsn, in either URL or keyword/value form, to name
// database db while leaving every other setting as it was.
func withDatabase(dsn, db string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		// In keyword/value form the last occurrence of a keyword wins.
		return dsn + " dbname='" + db + "'", nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("pgtest: parse DSN: %w", err)
	}
	u.Path, u.RawPath = "/"+db, ""
	// A dbname query parameter would override the path; re-encode the query
	// only then, to keep the rest of it byte for byte.
	if q := u.Query(); q.Has("dbname") || q.Has("database") {
		q.Del("dbname")
		q.Del("database")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

func findBinaries() (string, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		// Take postgres from next to initdb, following a symlink into the
		// installation, so that both come from one version.
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		dir := filepath.Dir(initdb)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	// Debian and Ubuntu keep server binaries out of PATH, one directory per
	// major version.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		if err != nil {
			return -1
		}
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return -cmpFloat(version(a), version(b)) })
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoServer
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func postgresUser() (*account, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, but PostgreSQL refuses to run as root and there is no 'postgres' user to run it as (%v); create one or run as an unprivileged user", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres user: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres user: gid %q: %w", u.Gid, err)
	}
	return &account{uid: uid, gid: gid}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the end of server output, where the reason for a failure is.
func tail(out []byte) string {
	const max = 4096
	if len(out) > max {
		out = out[len(out)-max:]
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	return strings.TrimSpace(string(out))
}
