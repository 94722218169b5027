// Package pgcluster runs throwaway PostgreSQL clusters: initdb into a temporary
// directory, a server on a free loopback port, and everything deleted on Stop. The
// demo uses it when it is given no database, and internal/pgtest wraps it for tests.
//
// The cluster trades durability for speed (fsync and full_page_writes are off): its
// data is discarded on Stop anyway. synchronous_commit stays on: sqlfence refuses a
// session whose commits are acknowledged early (SF709), and with fsync off a commit
// costs no flush either way.
//
// For failover tests the package also runs replicated clusters on loopback: a
// ReplicaSet (a primary and streaming standbys the test promotes, crashes and
// freezes itself; replicaset.go, node.go) and a Patroni cluster (etcd and 2–3
// Patroni nodes that elect their leader; patroni.go, patroni_node.go).
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgbin"
)

// ErrNoServer reports that no PostgreSQL server binaries were found or fetched
// (internal/pgbin). It is the one failure that says nothing about the caller, so
// tests may treat it as a reason to skip rather than fail.
var ErrNoServer = pgbin.ErrNoServer

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
	bindAttempts = 5
)

// Cluster is a running throwaway PostgreSQL server. Stop it to free its port
// and delete its data.
type Cluster struct {
	dir  string
	port int
	bin  string               // the server binaries, for Restart
	attr *syscall.SysProcAttr // how the server runs, for Restart
	*server

	stopOnce sync.Once
	stopErr  error
}

// server is one run of the postgres process; Restart replaces it.
type server struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returns
	err    error         // result of cmd.Wait, valid after exited is closed
}

// account is the OS user the server runs as when this process is root.
type account struct{ uid, gid int }

// chown gives path to the account the servers run as; nil (not root): nothing to do.
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	if err := os.Chown(path, a.uid, a.gid); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// Start initializes a new cluster in a temporary directory and starts a server
// on a free loopback port. ctx bounds only the startup; the server runs until
// Stop or until this process dies.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := findBinaries(ctx)
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
	dir, err := os.MkdirTemp("", "pgcluster-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
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
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir, initdb.SysProcAttr = dir, attr
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgcluster: initdb: %w\n%s", err, tail(out))
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
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer logFile.Close() // the child has its own copy

	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "logging_collector=off",
	)
	cmd.Dir, cmd.SysProcAttr = dir, attr
	cmd.Stdout, cmd.Stderr = logFile, logFile
	srv, err := startServer(cmd)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c := &Cluster{dir: dir, port: port, bin: bin, attr: attr, server: srv}

	if err := c.waitReady(ctx); err != nil {
		c.shutdown()
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte("could not bind")) || bytes.Contains(log, []byte("could not create any TCP/IP sockets")) {
			err = fmt.Errorf("%w %d: %v", errBind, port, err)
		}
		return nil, fmt.Errorf("pgcluster: postgres did not become ready: %w\n%s", err, tail(log))
	}
	return c, nil
}

// waitReady connects through the Unix socket in the cluster's own directory,
// so a foreign server that grabbed the port cannot be mistaken for ours.
func (c *Cluster) waitReady(ctx context.Context) error {
	return waitSocket(ctx, c.dir, c.port, c.server)
}

// waitSocket waits until the server srv, listening on port with its socket in
// dir, accepts connections, or exits.
func waitSocket(ctx context.Context, dir string, port int, srv *server) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	socketDSN := fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=2", dir, port)
	for {
		conn, err := pgx.Connect(ctx, socketDSN)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-srv.exited:
			return fmt.Errorf("postgres exited: %v", srv.err)
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

// Restart shuts the server down as Stop does (a fast shutdown: clients are
// disconnected, committed data kept) and starts it again on the same data and port,
// as a server restart does to the clients of a real one. Do not call it
// concurrently with Stop or another Restart.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.shutdown(); err != nil {
		return err
	}
	n, err := launch(ctx, c.bin, c.dir, c.port, c.attr)
	if err != nil {
		return err
	}
	c.server = n.server
	return nil
}

func (c *Cluster) shutdown() error {
	// SIGINT is postgres' fast shutdown: it disconnects clients instead of
	// waiting for them, which is what a process on its way out wants.
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
		if c.err != nil {
			return fmt.Errorf("pgcluster: postgres: %w", c.err)
		}
		return nil
	case <-time.After(stopTimeout):
		c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("pgcluster: postgres ignored SIGINT for %v and was killed", stopTimeout)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: find a free port: %w", err)
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
