package pgcluster

// One server of a ReplicaSet and what a test does to it: crash it, freeze it,
// promote it, start it again, cut its replication.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// Node is one server of a ReplicaSet. Its methods may be called from several
// goroutines.
type Node struct {
	set  *ReplicaSet
	name string
	dir  string // data/, the Unix socket and postgres.log
	port int    // fixed at the first start, kept across Kill and Start

	mu  sync.Mutex
	srv *server       // nil while killed
	cut *walsenderCut // set by CutReplication
}

// Name is the node's name, also its application_name as a standby: "node0", …
func (n *Node) Name() string { return n.name }

// Port is the node's loopback TCP port.
func (n *Node) Port() int { return n.port }

// DataDir is the node's data directory.
func (n *Node) DataDir() string { return n.data() }

func (n *Node) data() string { return filepath.Join(n.dir, "data") }

// DSN returns a URL for the superuser postgres on database db of this node.
func (n *Node) DSN(db string) string { return nodeDSN(n.port, db) }

func nodeDSN(port int, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", port, db)
}

// Connect opens a superuser connection to database db of this node.
func (n *Node) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, n.DSN(db))
}

// Position reads where the node stands in the cluster's history (timeline, WAL
// position, standby or not).
func (n *Node) Position(ctx context.Context) (pgcatalog.Position, error) {
	return readPosition(ctx, n.DSN("postgres"))
}

// Running reports whether the node's postmaster runs (it may be frozen).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv != nil && n.srv.running()
}

// launchNew starts the node for the first time: on a fresh free port, retried
// with another one when a process grabbed the port in between.
func (n *Node) launchNew(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		n.port = port
		err = n.launch(ctx)
		if err == nil || attempt == bindAttempts || !errors.Is(err, errBind) {
			return err
		}
	}
}

// launch starts postgres on the node's data directory and port and waits until
// it accepts connections (a standby: once consistent). Called with n.mu held.
func (n *Node) launch(ctx context.Context) error {
	logPath := filepath.Join(n.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	logStart, _ := logFile.Seek(0, 2)

	// The postmaster is started directly, not through pg_ctl, so that it is this
	// process's child: Pdeathsig then kills it if this process dies.
	cmd := exec.Command(filepath.Join(n.set.bin, "postgres"),
		"-D", n.data(),
		"-p", strconv.Itoa(n.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+n.dir,
		"-c", "cluster_name="+n.name, // names the processes in ps
	)
	cmd.Dir, cmd.SysProcAttr = n.dir, n.set.attr
	cmd.Stdout, cmd.Stderr = logFile, logFile
	srv, err := startServer(cmd)
	if err != nil {
		return fmt.Errorf("pgcluster: start postgres for %s: %w", n.name, err)
	}
	if err := waitSocket(ctx, n.dir, n.port, srv); err != nil {
		srv.cmd.Process.Kill()
		<-srv.exited
		log := readFrom(logPath, logStart)
		if containsAny(log, "could not bind", "could not create any TCP/IP sockets") {
			err = fmt.Errorf("%w %d: %v", errBind, n.port, err)
		}
		return fmt.Errorf("pgcluster: %s did not become ready: %w\n%s", n.name, err, tail(log))
	}
	n.srv = srv
	return nil
}

// Start starts the node again after Kill, on the same data directory and port.
// Nothing is repaired first: a killed primary comes back as a primary on its old
// timeline (after crash recovery), even if a standby was promoted meanwhile —
// two primaries, the split brain a fencing token must survive. A killed standby
// comes back as a standby of the server it streamed from.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil && n.srv.running() {
		return fmt.Errorf("pgcluster: %s is running", n.name)
	}
	return n.launch(ctx)
}

// Kill crashes the node: SIGKILL of the postmaster and all its children at once
// (frozen first, so none of them reacts to another's death). What the primary
// committed but had not streamed yet exists only in its own data directory.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv == nil {
		return fmt.Errorf("pgcluster: %s is not running", n.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err := killTree(ctx, n.srv.pid())
	n.srv.cmd.Process.Kill() // in case the tree walk failed
	<-n.srv.exited
	n.srv = nil
	// A walsender stopped for this standby would otherwise stay in the
	// primary's pg_stat_replication under this node's name.
	if n.cut != nil {
		n.cut.restore()
		n.cut = nil
	}
	return err
}

// Freeze stops every process of the node with SIGSTOP, as if its machine
// hung: connections stay open, nothing answers.
func (n *Node) Freeze() error {
	pid, err := n.pid()
	if err != nil {
		return err
	}
	return freezeTree(pid)
}

// Thaw continues every process of the node after Freeze.
func (n *Node) Thaw() error {
	pid, err := n.pid()
	if err != nil {
		return err
	}
	return thawTree(pid)
}

func (n *Node) pid() (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv == nil {
		return 0, fmt.Errorf("pgcluster: %s is not running", n.name)
	}
	return n.srv.pid(), nil
}

// Promote promotes the standby and returns once it takes writes. It uses
// pg_promote(), which is what pg_ctl promote does (a signal file and SIGUSR1)
// without a process to run as the postgres user, and waits for the end of
// recovery itself.
func (n *Node) Promote(ctx context.Context) error {
	wait := 60
	if d, ok := ctx.Deadline(); ok {
		wait = max(1, int(time.Until(d).Seconds()))
	}
	var ok bool
	if err := queryRow(ctx, n.DSN("postgres"), "SELECT pg_promote(true, $1)", []any{wait}, &ok); err != nil {
		return fmt.Errorf("pgcluster: promote %s: %w", n.name, err)
	}
	if !ok {
		return fmt.Errorf("pgcluster: promote %s: not promoted within %ds", n.name, wait)
	}
	return waitWritable(ctx, n.DSN("postgres"), n.name)
}

// waitWritable waits until the server at dsn is out of recovery.
func waitWritable(ctx context.Context, dsn, name string) error {
	return poll(ctx, name+" out of recovery", 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		var rec bool
		err := queryRow(ctx, dsn, "SELECT pg_is_in_recovery()", nil, &rec)
		return err == nil && !rec, err
	})
}

// CutReplication makes this standby stop receiving WAL while its upstream keeps
// committing: it stops (SIGSTOP) the upstream's walsender for this standby. WAL
// committed after it returns never reaches the standby, so promoting it later
// loses that tail. See walsenderCut for why the walsender and not the standby's
// walreceiver. With synchronous replication to this standby, commits on the
// primary hang, as they do when a synchronous standby is unreachable.
//
// The cut lasts until RestoreReplication, Follow, or a restart of either side.
func (n *Node) CutReplication(ctx context.Context) error {
	return cutOff(ctx, &n.mu, &n.cut, n.name, n.DSN("postgres"), n.set.ports())
}

// RestoreReplication ends CutReplication: the walsender continues and the
// standby catches up. Without a cut it does nothing.
func (n *Node) RestoreReplication() error { return restoreCut(&n.mu, &n.cut) }

// Follow points this standby at newPrimary (primary_conninfo with ALTER SYSTEM,
// which a reload applies: the walreceiver restarts) and waits until it streams
// from it. The standby follows the new primary's timeline
// (recovery_target_timeline is 'latest'); a standby that had replayed past the
// point where that timeline forked cannot, and Follow then waits until ctx ends.
// It ends a cut.
func (n *Node) Follow(ctx context.Context, newPrimary *Node) error {
	if err := n.RestoreReplication(); err != nil {
		return err
	}
	dsn := n.DSN("postgres")
	var rec bool
	if err := queryRow(ctx, dsn, "SELECT pg_is_in_recovery()", nil, &rec); err != nil {
		return err
	}
	if !rec {
		return fmt.Errorf("pgcluster: %s is a primary; only a standby can follow", n.name)
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", newPrimary.port, n.name)
	if err := execSQL(ctx, dsn, "ALTER SYSTEM SET primary_conninfo = '"+conninfo+"'", "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	return waitStreaming(ctx, newPrimary.DSN("postgres"), n.name, "")
}

func readFrom(path string, offset int64) []byte {
	b, _ := os.ReadFile(path)
	if offset > 0 && offset <= int64(len(b)) {
		b = b[offset:]
	}
	return b
}
