package pgcluster

// A Patroni cluster on loopback: one etcd and 2 or 3 Patroni nodes, each with its
// own REST port, PostgreSQL port and data directory, for chaos runs in which
// Patroni, not the test, decides who leads. Everything runs from a temporary
// directory; Stop (or, if this process dies, the watchdog) removes it.
//
// Written against Patroni 3.0.2 and etcd 3.4 (Debian bookworm): etcd 3.4 has its
// v2 API off, so the configuration uses Patroni's etcd3 section.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrNoPatroni reports that Patroni, patronictl or etcd is not installed; like
// ErrNoServer, a reason for a test to skip outside CI.
var ErrNoPatroni = errors.New("pgcluster: patroni, patronictl or etcd not found in PATH; install them (Debian: apt-get install patroni etcd-server)")

// PatroniOptions shape a Patroni cluster. Zero values take the defaults.
type PatroniOptions struct {
	// Nodes is the number of Patroni nodes: 2 or 3 (default 3).
	Nodes int
	// SynchronousMode and SynchronousModeStrict are Patroni's synchronous_mode
	// and synchronous_mode_strict.
	SynchronousMode, SynchronousModeStrict bool
	// TTL, LoopWait and RetryTimeout are Patroni's ttl, loop_wait and
	// retry_timeout in seconds (defaults 15, 3, 5; Patroni wants
	// loop_wait + 2*retry_timeout <= ttl). Lower values fail over faster but
	// make false failovers likely on a loaded machine.
	TTL, LoopWait, RetryTimeout int
	// Bin is the directory of the server binaries, as in ReplicaOptions.
	Bin string
}

// Patroni is a running Patroni cluster.
type Patroni struct {
	dir       string
	bin       string // PostgreSQL server binaries
	patroni   string // the patroni and patronictl executables
	ctl       string
	ctlConfig string // patronictl's configuration file
	scope     string
	attr      *syscall.SysProcAttr
	runAs     *account
	etcd      *etcd
	watchdog  *watchdog
	nodes     []*PatroniNode

	stopOnce sync.Once
}

// StartPatroni starts etcd and o.Nodes Patroni nodes and returns once there is a
// leader that takes writes, every other node streams from it, Patroni reports
// every member running and, in synchronous mode, a synchronous standby. ctx
// bounds only the start.
func StartPatroni(ctx context.Context, o PatroniOptions) (*Patroni, error) {
	o = o.withDefaults()
	if o.Nodes < 2 || o.Nodes > 3 {
		return nil, fmt.Errorf("pgcluster: %d Patroni nodes; want 2 or 3", o.Nodes)
	}
	if o.LoopWait+2*o.RetryTimeout > o.TTL {
		return nil, fmt.Errorf("pgcluster: Patroni needs loop_wait + 2*retry_timeout <= ttl (got %d, %d, %d)", o.LoopWait, o.RetryTimeout, o.TTL)
	}
	p := &Patroni{bin: o.Bin}
	var err, err2, err3 error
	etcdBin, err1 := exec.LookPath("etcd")
	p.patroni, err2 = exec.LookPath("patroni")
	p.ctl, err3 = exec.LookPath("patronictl")
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoPatroni, err)
	}
	// Patroni copies replicas with pg_basebackup and rewinds a former leader with
	// pg_rewind; a build without them (the fetched ones) cannot make a cluster.
	tools := []string{"initdb", "postgres", "pg_ctl", "pg_basebackup", "pg_rewind"}
	if p.bin == "" {
		if p.bin, err = findBinaries(ctx, tools...); err != nil {
			return nil, err
		}
	} else {
		for _, b := range tools {
			if !isExecutable(filepath.Join(p.bin, b)) {
				return nil, fmt.Errorf("%w: %s has no %s, which Patroni needs", ErrNoServer, p.bin, b)
			}
		}
	}
	if os.Geteuid() == 0 {
		if p.runAs, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	if p.attr, err = sysProcAttr(p.runAs); err != nil {
		return nil, err
	}
	if p.dir, err = os.MkdirTemp("", "pgpatroni-"); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := p.start(ctx, o, etcdBin); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (o PatroniOptions) withDefaults() PatroniOptions {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.TTL == 0 {
		o.TTL = 15
	}
	if o.LoopWait == 0 {
		o.LoopWait = 3
	}
	if o.RetryTimeout == 0 {
		o.RetryTimeout = 5
	}
	return o
}

func (p *Patroni) start(ctx context.Context, o PatroniOptions, etcdBin string) error {
	if err := p.runAs.chown(p.dir); err != nil {
		return err
	}
	// etcd's two ports, then a PostgreSQL and a REST port per node. A port
	// taken by someone else between here and the bind fails the start.
	ports, err := freePorts(2 + 2*o.Nodes)
	if err != nil {
		return err
	}
	p.scope = "pgcluster-" + strconv.Itoa(ports[0])
	var dataDirs []string
	for i := range o.Nodes {
		n := &PatroniNode{
			p:        p,
			name:     "node" + strconv.Itoa(i),
			dir:      filepath.Join(p.dir, "node"+strconv.Itoa(i)),
			pgPort:   ports[2+2*i],
			restPort: ports[3+2*i],
		}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if err := p.runAs.chown(n.dir); err != nil {
			return err
		}
		p.nodes = append(p.nodes, n)
		dataDirs = append(dataDirs, n.data())
	}
	// The watchdog comes first: from the first postmaster on, this process may
	// die leaving one behind.
	if p.watchdog, err = startWatchdog(p.dir, dataDirs); err != nil {
		return err
	}
	if p.etcd, err = startEtcd(ctx, etcdBin, p.dir, ports[0], ports[1]); err != nil {
		return err
	}

	for _, n := range p.nodes {
		n.config = filepath.Join(n.dir, "patroni.yml")
		if err := p.writeYAML(n.config, n.patroniConfig(o)); err != nil {
			return err
		}
	}
	p.ctlConfig = filepath.Join(p.dir, "patronictl.yml")
	if err := p.writeYAML(p.ctlConfig, map[string]any{"scope": p.scope, "namespace": patroniNamespace, "etcd3": p.etcdSection()}); err != nil {
		return err
	}
	// All at once: one wins the initialize key and bootstraps, the others wait
	// for it and then copy it with pg_basebackup.
	for _, n := range p.nodes {
		if err := n.launch(); err != nil {
			return err
		}
	}
	leader, err := p.WaitNewLeader(ctx, nil)
	if err != nil {
		return err
	}
	for _, n := range p.nodes {
		if n != leader {
			if err := n.WaitStreaming(ctx); err != nil {
				return err
			}
		}
	}
	// Patroni's view lags postgres': a replica that streams may still be
	// "starting" to Patroni, and in synchronous_mode no replica is the
	// synchronous standby yet (so commits do not wait, or under strict mode all
	// wait). Tests start from the settled state.
	return poll(ctx, "Patroni to settle", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		members, err := p.Members(ctx)
		if err != nil {
			return false, err
		}
		settled, sync := 0, false
		for _, m := range members {
			if m.State == "running" || m.State == "streaming" {
				settled++
			}
			sync = sync || m.Role == "sync_standby"
		}
		if settled != len(p.nodes) || (o.SynchronousMode && !sync) {
			return false, fmt.Errorf("members %+v", members)
		}
		return true, nil
	})
}

func (p *Patroni) etcdSection() map[string]any {
	return map[string]any{"hosts": []string{"127.0.0.1:" + strconv.Itoa(p.etcd.port)}, "protocol": "http"}
}

// patroniConfig is a node's patroni.yml. bootstrap.dcs goes into etcd when the
// cluster is first initialized and is shared by all nodes; the rest is the
// node's own.
func (n *PatroniNode) patroniConfig(o PatroniOptions) map[string]any {
	rest := "127.0.0.1:" + strconv.Itoa(n.restPort)
	pg := "127.0.0.1:" + strconv.Itoa(n.pgPort)
	return map[string]any{
		"scope":     n.p.scope,
		"namespace": patroniNamespace,
		"name":      n.name,
		"restapi":   map[string]any{"listen": rest, "connect_address": rest},
		"etcd3":     n.p.etcdSection(),
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     o.TTL,
				"loop_wait":               o.LoopWait,
				"retry_timeout":           o.RetryTimeout,
				"synchronous_mode":        o.SynchronousMode,
				"synchronous_mode_strict": o.SynchronousModeStrict,
				// Any replica may be promoted however far behind: the tests
				// lose WAL tails on purpose (CutReplication), and Patroni's 1 MB
				// default would refuse the very failover under test.
				"maximum_lag_on_failover": int64(1) << 40,
				"postgresql": map[string]any{
					"use_pg_rewind": true, // the old primary rejoins as a replica
					"use_slots":     true,
					// As replicaConf, which explains each.
					"parameters": map[string]any{
						"wal_level":             "replica",
						"hot_standby":           "on",
						"wal_log_hints":         "on",
						"full_page_writes":      "on",
						"max_wal_senders":       10,
						"max_replication_slots": 10,
						"wal_keep_size":         "256MB",
						"fsync":                 "off",
						"synchronous_commit":    "on",
						"wal_receiver_timeout":  0,
						"max_connections":       100,
					},
				},
			},
			"initdb": []any{map[string]any{"encoding": "UTF8"}, map[string]any{"locale": "C"}, map[string]any{"auth": "trust"}, "no-sync"},
		},
		"postgresql": map[string]any{
			"listen":          pg,
			"connect_address": pg,
			"data_dir":        n.data(),
			"bin_dir":         n.p.bin,
			"pgpass":          filepath.Join(n.dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   map[string]any{"username": "postgres"},
				"replication": map[string]any{"username": "replicator"},
			},
			"parameters": map[string]any{
				"unix_socket_directories": n.dir,
				"cluster_name":            n.name,
				"logging_collector":       "off", // postgres logs into patroni.log
				"log_line_prefix":         "%m [%p] %q%a ",
			},
			"pg_hba": []string{
				"local all all trust",
				"host all all 127.0.0.1/32 trust",
				"host replication all 127.0.0.1/32 trust",
			},
			"basebackup": []any{map[string]any{"checkpoint": "fast"}},
		},
		"watchdog": map[string]any{"mode": "off"},
	}
}

func (p *Patroni) writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return p.runAs.chown(path)
}

// Nodes returns the Patroni nodes, named "node0", "node1", …; which one leads
// is Patroni's choice (see Leader).
func (p *Patroni) Nodes() []*PatroniNode { return p.nodes }

// MultiHostDSN returns a URL listing every node's PostgreSQL, for a client that
// finds the writable one itself (target_session_attrs=read-write).
func (p *Patroni) MultiHostDSN(db string) string { return multiHostDSN(p.ports(), db) }

// ports lists the nodes' PostgreSQL ports, in order.
func (p *Patroni) ports() []int {
	ports := make([]int, len(p.nodes))
	for i, n := range p.nodes {
		ports[i] = n.pgPort
	}
	return ports
}

// Stop kills every node (Patroni and postgres), etcd and the watchdog, and
// deletes all data. It is safe to call more than once.
func (p *Patroni) Stop() {
	p.stopOnce.Do(func() {
		for _, n := range p.nodes {
			n.Kill()
		}
		if p.etcd != nil {
			p.etcd.kill()
		}
		if p.watchdog != nil {
			p.watchdog.fire()
		}
		os.RemoveAll(p.dir)
	})
}

// patronictl runs patronictl with the generated configuration.
func (p *Patroni) patronictl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, p.ctl, append([]string{"-c", p.ctlConfig}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.dir, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	cmd.Dir = p.dir
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgcluster: patronictl %v: %w\n%s", args, err, tail(out))
	}
	return nil
}

// patroniNamespace is the etcd key prefix; patronictl must be given it too.
const patroniNamespace = "/pgcluster/"
