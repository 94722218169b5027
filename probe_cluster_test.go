package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence/internal/pgcluster"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

const probePolicy = "version: 1\nresolve: none\ntables: [inventory]\n"

// splitBrain starts a primary and a standby, kills the primary, promotes the standby
// (timeline 2) and restarts the old primary without a rewind: a primary on timeline 1
// again. Under CI=true a machine without the server binaries fails the test.
func splitBrain(t *testing.T, ctx context.Context) (rs *pgcluster.ReplicaSet, old, promoted *pgcluster.Node) {
	t.Helper()
	rs, err := pgcluster.StartReplicaSet(ctx, pgcluster.ReplicaOptions{Standbys: 1})
	if errors.Is(err, pgcluster.ErrNoServer) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	old, promoted = rs.Nodes()[0], rs.Nodes()[1]
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := promoted.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		node *pgcluster.Node
		tl   int64
	}{{old, 1}, {promoted, 2}} {
		if pos, err := n.node.Position(ctx); err != nil || pos.Standby || pos.Timeline != n.tl {
			t.Fatalf("%s at %v (%v), want a primary on timeline %d", n.node.Name(), pos, err, n.tl)
		}
	}
	return rs, old, promoted
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func hostsDSN(ports ...int) string {
	hosts := make([]string, len(ports))
	for i, p := range ports {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

// TestProbeFreshConnectorRefusesOldPrimary: a fresh connector — the registered
// driver, and NewConnector over pgx's stdlib — on a multi-host DSN that lists the old
// primary first lands on it (it is read-write) and, having read the promoted host
// first, refuses the session with SF707 naming timeline 2 and the host it was read
// on. A single-host DSN to the old primary is still accepted (nothing to compare
// with); an unreachable fallback host does not fail a fresh connector.
func TestProbeFreshConnectorRefusesOldPrimary(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	_, old, promoted := splitBrain(t, ctx)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(probePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := hostsDSN(old.Port(), promoted.Port())
	promotedAddr := "127.0.0.1:" + strconv.Itoa(promoted.Port())

	refused := func(t *testing.T, db *sql.DB) {
		t.Helper()
		defer db.Close()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := db.ExecContext(sctx, `SELECT 1`)
		e := wantCode(t, "a fresh connector's first session on the old primary", err, rulecode.BehindHistory)
		for _, want := range []string{"primary on timeline 1", "behind timeline 2 at", promotedAddr, "another host of its DSN", "old primary", "pg_rewind"} {
			if !strings.Contains(e.Error(), want) {
				t.Errorf("the message does not say %q: %v", want, e)
			}
		}
		t.Log(e)
	}
	t.Run("registered", func(t *testing.T) {
		db, err := sql.Open(DriverName, dsn+"&"+PolicyParam+"="+policyFile)
		if err != nil {
			t.Fatal(err)
		}
		refused(t, db)
	})
	t.Run("NewConnector", func(t *testing.T) {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		refused(t, sql.OpenDB(NewConnector(stdlib.GetConnector(*cfg), mustPolicy(t, probePolicy))))
	})
	accepted := func(t *testing.T, dsn string, wantTimeline int64) *connector {
		t.Helper()
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		c, err := newConnector(stdlib.GetConnector(*cfg), mustPolicy(t, probePolicy))
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		defer db.Close()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(sctx, `SELECT 1`); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if h := c.history.highest(); h.Timeline != wantTimeline {
			t.Errorf("the connector remembers %v, want timeline %d", h, wantTimeline)
		}
		return c
	}
	t.Run("single host", func(t *testing.T) {
		// The documented limit: one host, nothing else to read.
		accepted(t, hostsDSN(old.Port()), 1)
	})
	t.Run("unreachable fallback", func(t *testing.T) {
		if c := accepted(t, hostsDSN(promoted.Port(), deadPort(t), deadPort(t)), 2); c.probe.done.Load() {
			t.Error("no other host answered, yet the probe counts as done: a later session would not try again")
		}
		// The old primary first and nothing else answering: accepted (the limit), and
		// tried again on a later session.
		if c := accepted(t, hostsDSN(old.Port(), deadPort(t)), 1); c.probe.done.Load() {
			t.Error("the probe counts as done with no host answering")
		}
	})
	t.Run("new primary first", func(t *testing.T) {
		// The session is on the promoted host; the old primary, read by the probe,
		// is behind and does not stop it.
		accepted(t, hostsDSN(promoted.Port(), old.Port()), 2)
	})
}
