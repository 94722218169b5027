// A fresh connector's first look at the other hosts of its DSN: the memory of
// history.go starts empty, so a new process whose multi-host DSN reaches the old
// primary first (restarted by hand after a failover, still a primary on its old
// timeline) would have nothing to compare it with. Before its first session is judged,
// a connector on pgx reads the position of every other host its DSN names and starts
// its memory from the newest of them.

package sqlfence

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
)

// probeTimeout bounds one host's probe (connect, then the position's query, each)
// when the DSN sets no connect_timeout; probeRetry is how long a probe that no host
// answered waits before a later session tries again.
const (
	probeTimeout = 10 * time.Second
	probeRetry   = 30 * time.Second
)

// hostProbe is a connector's state of its one probe of the DSN's hosts.
type hostProbe struct {
	done atomic.Bool // probed (some host answered), or nothing to probe
	mu   sync.Mutex  // held while probing: a second first session waits for the seed
	next time.Time   // after a probe no host answered: not before then
}

// probed is one host's position.
type probed struct {
	host string
	pos  pgcatalog.Position
}

// probeHosts seeds the history, once per connector, with the positions of the hosts
// of conn's DSN other than conn's own server, when the DSN names more than one.
// Unreachable hosts are skipped; when none answers, a later session tries again
// (not before probeRetry). conn nil (not pgx): nothing to read.
func (f *fence) probeHosts(ctx context.Context, conn *pgx.Conn) {
	p := &f.probe
	if conn == nil || p.done.Load() {
		return
	}
	cfg := conn.Config() // a copy, taken until the probe is done
	hosts := dsnHosts(&cfg.Config)
	if len(hosts) < 2 {
		p.done.Store(true) // a single host: nothing to ask, ever
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done.Load() || time.Now().Before(p.next) {
		return
	}
	self := ""
	if nc := conn.PgConn().Conn(); nc != nil && nc.RemoteAddr() != nil {
		self = nc.RemoteAddr().String()
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		got      []probed
		answered bool
	)
	for _, h := range hosts {
		if h.addr == self {
			continue // the session's own server: its position is read on it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pos, err := probeHost(ctx, cfg, h.entries)
			if err != nil {
				f.Log().Debug("sqlfence: a host of the DSN did not answer the position probe; skipped", "host", h.addr, "err", err)
				return
			}
			mu.Lock()
			got = append(got, probed{host: h.addr, pos: pos})
			answered = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if !answered {
		// Every other host was unreachable: try again on a later session.
		p.next = time.Now().Add(probeRetry)
		return
	}
	if e := f.history.seed(got); e != "" {
		f.Log().Warn("sqlfence: the hosts of the DSN belong to more than one cluster; the connector's memory starts empty", "systems", e)
	}
	p.done.Store(true)
}

// dsnHost is one host of a DSN and the attempts pgx makes on it (sslmode=prefer
// tries it with TLS, then without).
type dsnHost struct {
	addr    string
	entries []*pgconn.FallbackConfig
}

// dsnHosts lists the distinct hosts of cfg (its first host and its fallbacks), in
// order.
func dsnHosts(cfg *pgconn.Config) []dsnHost {
	all := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	var hosts []dsnHost
	index := map[string]int{}
	for _, fb := range all {
		_, addr := pgconn.NetworkAddress(fb.Host, fb.Port)
		i, ok := index[addr]
		if !ok {
			i = len(hosts)
			index[addr] = i
			hosts = append(hosts, dsnHost{addr: addr})
		}
		hosts[i].entries = append(hosts[i].entries, fb)
	}
	return hosts
}

// probeHost reads one host's position on a short-lived connection of base's
// credentials and TLS to that host alone, standby or not (target_session_attrs and
// the DSN's AfterConnect do not apply), within the connect timeout for the connect and
// again for the query.
func probeHost(ctx context.Context, base *pgx.ConnConfig, entries []*pgconn.FallbackConfig) (pgcatalog.Position, error) {
	c := base.Copy()
	c.Host, c.Port, c.TLSConfig = entries[0].Host, entries[0].Port, entries[0].TLSConfig
	c.Fallbacks = entries[1:]
	c.ValidateConnect, c.AfterConnect = nil, nil
	c.DefaultQueryExecMode = pgx.QueryExecModeExec
	limit := c.ConnectTimeout
	if limit <= 0 {
		limit = probeTimeout
		c.ConnectTimeout = limit
	}
	ctx, cancel := context.WithTimeout(ctx, 2*limit)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, c)
	if err != nil {
		return pgcatalog.Position{}, err
	}
	defer conn.Close(ctx)
	return pgcatalog.ReadPosition(ctx, pgcatalog.PgxQuery(conn))
}
