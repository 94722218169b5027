package pgcluster

// One Patroni node and what a test does to it, and the cluster-wide questions
// answered through Patroni's REST API (who leads) and patronictl (failovers).

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// PatroniNode is one Patroni process and the PostgreSQL it manages.
type PatroniNode struct {
	p        *Patroni
	name     string
	dir      string // data/, patroni.yml, patroni.log (Patroni's and postgres' output), the socket
	config   string
	pgPort   int
	restPort int

	mu      sync.Mutex
	patroni *server // nil while killed
	cut     *walsenderCut
}

// logTail returns the last lines of the node's patroni.log (Patroni's and
// postgres' output), for a failed test to show.
func (n *PatroniNode) logTail(lines int) string {
	b, err := os.ReadFile(filepath.Join(n.dir, "patroni.log"))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Name is the node's Patroni member name, also its application_name as a
// replica: "node0", …
func (n *PatroniNode) Name() string { return n.name }

// Port is the node's PostgreSQL port.
func (n *PatroniNode) Port() int { return n.pgPort }

// RestPort is the port of the node's Patroni REST API.
func (n *PatroniNode) RestPort() int { return n.restPort }

// DataDir is the node's PostgreSQL data directory.
func (n *PatroniNode) DataDir() string { return n.data() }

func (n *PatroniNode) data() string { return filepath.Join(n.dir, "data") }

// DSN returns a URL for the superuser postgres on database db of this node.
func (n *PatroniNode) DSN(db string) string { return nodeDSN(n.pgPort, db) }

// Connect opens a superuser connection to database db of this node.
func (n *PatroniNode) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, n.DSN(db))
}

// Position reads where the node's PostgreSQL stands in the cluster's history.
func (n *PatroniNode) Position(ctx context.Context) (pgcatalog.Position, error) {
	return readPosition(ctx, n.DSN("postgres"))
}

func (n *PatroniNode) restURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(n.restPort) + path
}

// launch starts Patroni on the node. Patroni runs as the postgres user when
// this process is root, through the process credentials rather than runuser: a
// runuser in between would take the Pdeathsig meant for Patroni and leave
// Patroni running when this process dies.
func (n *PatroniNode) launch() error {
	logFile, err := os.OpenFile(filepath.Join(n.dir, "patroni.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(n.p.patroni, n.config)
	// A clean environment: PG* variables of the test run must not steer
	// Patroni's pg_basebackup or pg_rewind, nor PATRONI_* its configuration.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + n.dir, "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PYTHONUNBUFFERED=1"}
	cmd.Dir, cmd.SysProcAttr = n.dir, n.p.attr
	cmd.Stdout, cmd.Stderr = logFile, logFile
	srv, err := startServer(cmd)
	if err != nil {
		return fmt.Errorf("pgcluster: start patroni for %s: %w", n.name, err)
	}
	n.patroni = srv
	return nil
}

// Start starts Patroni on the node again after Kill and returns once its REST
// API answers. Patroni then recovers the postgres it finds, rewinds it if
// another node took over meanwhile, and rejoins it as a replica; WaitStreaming
// waits for the end of that.
func (n *PatroniNode) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.patroni != nil && n.patroni.running() {
		return fmt.Errorf("pgcluster: patroni on %s is running", n.name)
	}
	if err := n.launch(); err != nil {
		return err
	}
	srv := n.patroni
	return poll(ctx, "patroni on "+n.name+" answering", 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if !srv.running() {
			log, _ := os.ReadFile(filepath.Join(n.dir, "patroni.log"))
			return false, fmt.Errorf("patroni exited: %v\n%s", srv.err, tail(log))
		}
		_, err := getJSON(ctx, n.restURL("/patroni"), nil)
		return err == nil, err
	})
}

// postmasterPID returns the pid of the node's postmaster, or 0. Patroni's
// postmaster is not this process's child, so its pid comes from postmaster.pid,
// checked against the process's command line in case the file is stale.
func (n *PatroniNode) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(n.data(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 || !cmdlineHas(pid, n.data()) {
		return 0
	}
	return pid
}

// roots are the node's Patroni and postmaster, the tops of its process trees.
// Called with n.mu held.
func (n *PatroniNode) roots() []int {
	var roots []int
	if n.patroni != nil && n.patroni.running() {
		roots = append(roots, n.patroni.pid())
	}
	if pid := n.postmasterPID(); pid != 0 {
		roots = append(roots, pid)
	}
	return roots
}

// Kill crashes the node as a machine crash would: SIGKILL of Patroni, the
// postmaster and every process of either, at once. Patroni's leader key stays
// in etcd until its TTL runs out; only then may another node take over.
func (n *PatroniNode) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	roots := n.roots()
	if len(roots) == 0 {
		return fmt.Errorf("pgcluster: nothing of %s is running", n.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err := killTree(ctx, roots...)
	if n.patroni != nil {
		n.patroni.cmd.Process.Kill()
		<-n.patroni.exited
		n.patroni = nil
	}
	if n.cut != nil {
		n.cut.restore()
		n.cut = nil
	}
	return err
}

// Freeze stops Patroni and every postgres process of the node with SIGSTOP, a
// frozen VM. (SIGSTOP of the postmaster alone causes no failover: Patroni's own
// connection keeps working and Patroni keeps the leader key.)
func (n *PatroniNode) Freeze() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	roots := n.roots()
	if len(roots) == 0 {
		return fmt.Errorf("pgcluster: nothing of %s is running", n.name)
	}
	return freezeTree(roots...)
}

// Thaw continues every process of the node after Freeze.
func (n *PatroniNode) Thaw() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return thawTree(n.roots()...)
}

// CutReplication makes this replica stop receiving WAL while the leader keeps
// committing, as Node.CutReplication does (it stops the leader's walsender for
// this node). Patroni still counts the replica as streaming, so with
// synchronous_mode and this node the synchronous standby, commits hang. Thaw
// the walsender (RestoreReplication) before a switchover: a stopped walsender
// would hold up the old leader's shutdown.
func (n *PatroniNode) CutReplication(ctx context.Context) error {
	return cutOff(ctx, &n.mu, &n.cut, n.name, n.DSN("postgres"), n.p.ports())
}

// RestoreReplication ends CutReplication. Without a cut it does nothing.
func (n *PatroniNode) RestoreReplication() error { return restoreCut(&n.mu, &n.cut) }

// WaitStreaming waits until the current leader streams WAL to this node.
func (n *PatroniNode) WaitStreaming(ctx context.Context) error {
	return poll(ctx, n.name+" streaming from the leader", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		l, err := n.p.Leader(ctx)
		if err != nil || l == n {
			return false, err
		}
		var c int64
		err = queryRow(ctx, l.DSN("postgres"), `SELECT count(*) FROM pg_stat_replication
			WHERE application_name = $1 AND state = 'streaming'`, []any{n.name}, &c)
		return err == nil && c > 0, err
	})
}

// Member is one node as Patroni's GET /cluster reports it.
type Member struct {
	Name     string `json:"name"`
	Role     string `json:"role"`  // leader, replica, sync_standby
	State    string `json:"state"` // running, streaming, starting, stopped, …
	Timeline int64  `json:"timeline"`
}

// Members returns the cluster as Patroni sees it, asking each node's REST API
// in turn until one answers (a killed or frozen node does not).
func (p *Patroni) Members(ctx context.Context) ([]Member, error) {
	var last error
	for _, n := range p.nodes {
		var c struct{ Members []Member }
		status, err := getJSON(ctx, n.restURL("/cluster"), &c)
		if err == nil && status == http.StatusOK {
			return c.Members, nil
		}
		if err == nil {
			err = fmt.Errorf("%s: GET /cluster: HTTP %d", n.name, status)
		}
		last = err
	}
	return nil, fmt.Errorf("pgcluster: no Patroni REST API answered: %w", last)
}

// Leader returns the node holding Patroni's leader key. After a leader died the
// key, and so the answer, outlives it until the TTL runs out.
func (p *Patroni) Leader(ctx context.Context) (*PatroniNode, error) {
	members, err := p.Members(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.Role == "leader" || m.Role == "master" || m.Role == "primary" {
			for _, n := range p.nodes {
				if n.name == m.Name {
					return n, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("pgcluster: no leader among %+v", members)
}

// WaitNewLeader waits until a node other than old (nil: any node) holds the
// leader key, Patroni on it says it is the primary (GET /primary), and its
// postgres is out of recovery, then returns that node. Under
// synchronous_mode_strict a commit may still wait for a synchronous standby.
func (p *Patroni) WaitNewLeader(ctx context.Context, old *PatroniNode) (*PatroniNode, error) {
	var leader *PatroniNode
	err := poll(ctx, "a new leader", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		l, err := p.Leader(ctx)
		if err != nil || l == old {
			return false, err
		}
		if err := l.writable(ctx); err != nil {
			return false, err
		}
		leader = l
		return true, nil
	})
	return leader, err
}

// writable checks that Patroni on n runs it as the primary and that it left
// recovery.
func (n *PatroniNode) writable(ctx context.Context) error {
	status, err := getJSON(ctx, n.restURL("/primary"), nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: GET /primary: HTTP %d", n.name, status)
	}
	var rec bool
	if err := queryRow(ctx, n.DSN("postgres"), "SELECT pg_is_in_recovery()", nil, &rec); err != nil {
		return err
	}
	if rec {
		return fmt.Errorf("%s is still in recovery", n.name)
	}
	return nil
}

// Failover makes candidate the leader with patronictl failover --force and
// returns once it takes writes (6–7 s, most of it patronictl's own start).
func (p *Patroni) Failover(ctx context.Context, candidate *PatroniNode) error {
	if err := p.patronictl(ctx, "failover", "--candidate", candidate.name, "--force"); err != nil {
		return err
	}
	return p.waitLeaderIs(ctx, candidate)
}

// Reinit rebuilds n from the leader (patronictl reinit: its data deleted, a
// fresh base backup) and returns once it streams. An operator's step: a node
// on a newer timeline than the leader cannot follow it, and Patroni leaves it
// so.
func (p *Patroni) Reinit(ctx context.Context, n *PatroniNode) error {
	if err := p.patronictl(ctx, "reinit", p.scope, n.name, "--force", "--wait"); err != nil {
		return err
	}
	return n.WaitStreaming(ctx)
}

// Switchover hands the leadership from the current leader to candidate with
// patronictl switchover --force, a planned change: the old leader shuts down
// cleanly first.
func (p *Patroni) Switchover(ctx context.Context, candidate *PatroniNode) error {
	l, err := p.Leader(ctx)
	if err != nil {
		return err
	}
	if err := p.patronictl(ctx, "switchover", "--leader", l.name, "--candidate", candidate.name, "--force"); err != nil {
		return err
	}
	return p.waitLeaderIs(ctx, candidate)
}

func (p *Patroni) waitLeaderIs(ctx context.Context, want *PatroniNode) error {
	return poll(ctx, want.name+" leading", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		l, err := p.Leader(ctx)
		if err != nil {
			return false, err
		}
		if l != want {
			return false, fmt.Errorf("%s leads", l.name)
		}
		err = l.writable(ctx)
		return err == nil, err
	})
}
