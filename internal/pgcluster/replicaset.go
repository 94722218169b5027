package pgcluster

// A replica set: one primary made by initdb and standbys made from it by
// pg_basebackup (or, where the server build has none, by a base backup of its own:
// basebackup.go), streaming physical replication, every server a postgres process
// this process started, all on loopback. No failover manager runs: the test
// decides who is primary (Node.Promote) and crashes servers (Node.Kill), which
// makes the scenarios exact and fast. For failovers decided by a manager, see
// Patroni.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ReplicaOptions shape a replica set.
type ReplicaOptions struct {
	// Standbys is how many standbys stream from the primary (0 or more).
	Standbys int
	// Synchronous makes the primary wait for a standby's flush on commit:
	// synchronous_standby_names = 'FIRST 1 (node1, node2, …)', so node1 is the
	// synchronous standby and the others potential ones. It is set on the primary
	// only (with ALTER SYSTEM, after the standbys were copied), so a promoted
	// standby commits asynchronously, as a standby promoted by hand would.
	Synchronous bool
	// Bin is the directory of the server binaries (initdb, postgres, and
	// pg_basebackup where there is one); empty means the same search as Start's.
	Bin string
}

// ReplicaSet is a running primary and its standbys. Stop it to kill every
// server and delete their data.
type ReplicaSet struct {
	dir   string // everything lives under it, one subdirectory per node
	bin   string
	attr  *syscall.SysProcAttr
	runAs *account
	nodes []*Node
	// The postmasters are this process's children and die with it (Pdeathsig);
	// the watchdog only removes the directory then.
	watchdog *watchdog

	stopOnce sync.Once
}

// replicaConf is appended to the primary's postgresql.conf, which pg_basebackup
// copies to every standby, so all nodes share it and any can be promoted. Settings
// per node (port, socket directory) go on the postgres command line instead, where
// no copy carries them over. The command line outranks ALTER SYSTEM, so nothing a
// test might want to change with ALTER SYSTEM goes there.
const replicaConf = `
# pgcluster replica set
wal_level = replica
hot_standby = on
# pg_rewind needs hint-bit changes in the WAL (or data checksums) and full pages.
wal_log_hints = on
full_page_writes = on
max_wal_senders = 10
max_replication_slots = 10
# No replication slots: a cut standby must not make the primary keep WAL forever,
# and slots would not follow a promotion. wal_keep_size covers a test's lag.
wal_keep_size = '256MB'
# fsync off: a SIGKILL keeps what reached the OS, and the data dies with the test.
# synchronous_commit stays on, though: with it off a commit is acknowledged before
# its WAL is even written to the OS, and a Kill would lose acknowledged commits
# that a real crash with fsync on would keep.
fsync = off
synchronous_commit = on
# 0 disables the standby's timeout: otherwise a standby cut off by CutReplication
# reconnects after a minute and the cut heals by itself.
wal_receiver_timeout = 0
max_connections = 100
logging_collector = off
log_line_prefix = '%m [%p] %q%a '
`

// StartReplicaSet starts a primary and o.Standbys standbys, each on its own free
// loopback port and in its own data directory, and returns once every standby
// streams (and, with o.Synchronous, node1 is the synchronous standby). ctx bounds
// only the start.
func StartReplicaSet(ctx context.Context, o ReplicaOptions) (*ReplicaSet, error) {
	if o.Standbys < 0 {
		return nil, errors.New("pgcluster: negative number of standbys")
	}
	bin := o.Bin
	if bin == "" {
		var err error
		if bin, err = findBinaries(ctx); err != nil {
			return nil, err
		}
	}
	for _, b := range []string{"initdb", "postgres"} {
		if !isExecutable(filepath.Join(bin, b)) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNoServer, bin, b)
		}
	}
	r := &ReplicaSet{bin: bin}
	if os.Geteuid() == 0 {
		var err error
		if r.runAs, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	var err error
	if r.attr, err = sysProcAttr(r.runAs); err != nil {
		return nil, err
	}
	if r.dir, err = os.MkdirTemp("", "pgreplicas-"); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := r.start(ctx, o); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

func (r *ReplicaSet) start(ctx context.Context, o ReplicaOptions) error {
	if err := r.runAs.chown(r.dir); err != nil {
		return err
	}
	var dataDirs []string
	for i := 0; i <= o.Standbys; i++ {
		n := &Node{set: r, name: "node" + strconv.Itoa(i), dir: filepath.Join(r.dir, "node"+strconv.Itoa(i))}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if err := r.runAs.chown(n.dir); err != nil {
			return err
		}
		r.nodes = append(r.nodes, n)
		dataDirs = append(dataDirs, n.data())
	}
	var err error
	if r.watchdog, err = startWatchdog(r.dir, dataDirs); err != nil {
		return err
	}

	primary := r.nodes[0]
	initdb := exec.CommandContext(ctx, filepath.Join(r.bin, "initdb"),
		"-D", primary.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir, initdb.SysProcAttr = primary.dir, r.attr
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgcluster: initdb: %w\n%s", err, tail(out))
	}
	// initdb's pg_hba.conf already trusts loopback, replication connections
	// included, with -A trust.
	if err := appendFile(filepath.Join(primary.data(), "postgresql.conf"), replicaConf); err != nil {
		return err
	}
	if err := primary.launchNew(ctx); err != nil {
		return err
	}

	for _, n := range r.nodes[1:] {
		// -R writes standby.signal and primary_conninfo from the connection
		// string, application_name included, which is how the primary's
		// pg_stat_replication and synchronous_standby_names know the standby.
		conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", primary.port, n.name)
		if basebackup := filepath.Join(r.bin, "pg_basebackup"); isExecutable(basebackup) {
			bb := exec.CommandContext(ctx, basebackup, "-D", n.data(), "-d", conninfo, "-R", "-X", "stream", "-c", "fast", "--no-sync")
			bb.Dir, bb.SysProcAttr = n.dir, r.attr
			if out, err := bb.CombinedOutput(); err != nil {
				return fmt.Errorf("pgcluster: pg_basebackup for %s: %w\n%s", n.name, err, tail(out))
			}
		} else if err := copyBackup(ctx, primary, n.data(), conninfo, r.runAs); err != nil {
			return fmt.Errorf("%w (for %s)", err, n.name)
		}
		if err := n.launchNew(ctx); err != nil {
			return err
		}
	}

	if o.Synchronous && o.Standbys > 0 {
		names := make([]string, 0, o.Standbys)
		for _, n := range r.nodes[1:] {
			names = append(names, n.name)
		}
		sql := fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (%s)'", strings.Join(names, ", "))
		if err := execSQL(ctx, primary.DSN("postgres"), sql, "SELECT pg_reload_conf()"); err != nil {
			return err
		}
	}
	for i, n := range r.nodes[1:] {
		want := "async"
		if o.Synchronous {
			want = map[bool]string{true: "sync", false: "potential"}[i == 0]
		}
		if err := waitStreaming(ctx, primary.DSN("postgres"), n.name, want); err != nil {
			return err
		}
	}
	return nil
}

// waitStreaming waits until the server at upstream streams WAL to the standby
// named name, in the given sync_state ("" for any).
func waitStreaming(ctx context.Context, upstream, name, syncState string) error {
	return poll(ctx, name+" streaming", 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		var n int64
		err := queryRow(ctx, upstream, `SELECT count(*) FROM pg_stat_replication
			WHERE application_name = $1 AND state = 'streaming' AND ($2 = '' OR sync_state = $2)`,
			[]any{name, syncState}, &n)
		return err == nil && n > 0, err
	})
}

// Nodes returns the servers; index 0 is the initial primary, node i is named
// "node<i>".
func (r *ReplicaSet) Nodes() []*Node { return r.nodes }

// MultiHostDSN returns a URL listing every node, for a client that must find the
// writable one itself (libpq and pgx try the hosts in order and keep the first
// that is read-write).
func (r *ReplicaSet) MultiHostDSN(db string) string { return multiHostDSN(r.ports(), db) }

// ports lists the nodes' ports, in order.
func (r *ReplicaSet) ports() []int {
	ports := make([]int, len(r.nodes))
	for i, n := range r.nodes {
		ports[i] = n.port
	}
	return ports
}

func multiHostDSN(ports []int, db string) string {
	hosts := make([]string, len(ports))
	for i, p := range ports {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		strings.Join(hosts, ","), db)
}

// Stop kills every server (SIGKILL: nothing in them is worth a clean shutdown)
// and deletes all data. It is safe to call more than once.
func (r *ReplicaSet) Stop() {
	r.stopOnce.Do(func() {
		for _, n := range r.nodes {
			n.Kill()
		}
		if r.watchdog != nil {
			r.watchdog.fire()
		}
		os.RemoveAll(r.dir)
	})
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	_, err = f.WriteString(text)
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}
