package pgcluster

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"
)

// ciMode reports CI=true: there a test that cannot get its binaries fails.
func ciMode() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

func startReplicaSet(t *testing.T, o ReplicaOptions) *ReplicaSet {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	r, err := StartReplicaSet(ctx, o)
	if errors.Is(err, ErrNoServer) && !ciMode() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	t.Logf("replica set (%d standbys, synchronous %v) up in %v", o.Standbys, o.Synchronous, time.Since(begin).Round(time.Millisecond))
	return r
}

// step returns a context for one step of a test.
func step(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustExec(t *testing.T, n *Node, sql string) {
	t.Helper()
	if err := execSQL(step(t, 10*time.Second), n.DSN("postgres"), sql); err != nil {
		t.Fatalf("%s: %v", n.Name(), err)
	}
}

func count(t *testing.T, n *Node, sql string) int64 {
	t.Helper()
	var c int64
	if err := queryRow(step(t, 10*time.Second), n.DSN("postgres"), sql, nil, &c); err != nil {
		t.Fatalf("%s: %v", n.Name(), err)
	}
	return c
}

// member is a node of either harness: a ReplicaSet's or a Patroni cluster's.
type member interface {
	Name() string
	DSN(string) string
}

func position(t *testing.T, n member) (tl int64, standby bool) {
	t.Helper()
	p, err := readPosition(step(t, 10*time.Second), n.DSN("postgres"))
	if err != nil {
		t.Fatalf("%s: position: %v", n.Name(), err)
	}
	return p.Timeline, p.Standby
}

// waitRows waits until sql counts want rows on n (a standby catching up).
func waitRows(t *testing.T, n member, sql string, want int64) {
	t.Helper()
	err := poll(step(t, 10*time.Second), n.Name()+" catching up", 20*time.Millisecond, func(ctx context.Context) (bool, error) {
		var c int64
		err := queryRow(ctx, n.DSN("postgres"), sql, nil, &c)
		return err == nil && c == want, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReplicaSetFailover: a standby cut off, the primary crashed, the standby
// promoted (timeline 2, the tail lost), the old primary back as a second
// primary on timeline 1 (split brain, no rewind).
func TestReplicaSetFailover(t *testing.T) {
	r := startReplicaSet(t, ReplicaOptions{Standbys: 1})
	primary, standby := r.Nodes()[0], r.Nodes()[1]

	mustExec(t, primary, "CREATE TABLE t (v int)")
	mustExec(t, primary, "INSERT INTO t VALUES (1)")
	waitRows(t, standby, "SELECT count(*) FROM t", 1)
	if tl, sb := position(t, primary); tl != 1 || sb {
		t.Fatalf("primary: timeline %d, standby %v; want timeline 1 primary", tl, sb)
	}
	if tl, sb := position(t, standby); tl != 1 || !sb {
		t.Fatalf("standby: timeline %d, standby %v; want timeline 1 standby", tl, sb)
	}

	if err := standby.CutReplication(step(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, primary, "INSERT INTO t VALUES (2)") // acknowledged, never streamed
	time.Sleep(200 * time.Millisecond)
	if c := count(t, standby, "SELECT count(*) FROM t"); c != 1 {
		t.Fatalf("standby cut off has %d rows; want 1", c)
	}

	begin := time.Now()
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if primary.Running() {
		t.Fatal("primary runs after Kill")
	}
	killed := time.Since(begin)
	if err := standby.Promote(step(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("kill %v, promote %v", killed.Round(time.Millisecond), (time.Since(begin) - killed).Round(time.Millisecond))
	if tl, sb := position(t, standby); tl != 2 || sb {
		t.Fatalf("promoted standby: timeline %d, standby %v; want timeline 2 primary", tl, sb)
	}
	mustExec(t, standby, "INSERT INTO t VALUES (3)")
	if c := count(t, standby, "SELECT count(*) FROM t WHERE v = 2"); c != 0 {
		t.Errorf("the promoted standby has the row committed after the cut")
	}

	begin = time.Now()
	if err := primary.Start(step(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("old primary restarted in %v", time.Since(begin).Round(time.Millisecond))
	if tl, sb := position(t, primary); tl != 1 || sb {
		t.Fatalf("old primary restarted: timeline %d, standby %v; want timeline 1 primary", tl, sb)
	}
	mustExec(t, primary, "INSERT INTO t VALUES (4)")
	if c := count(t, primary, "SELECT count(*) FROM t WHERE v IN (1, 2, 4)"); c != 3 {
		t.Errorf("old primary has %d of rows 1, 2, 4; want all 3", c)
	}

	// Both take writes now; the multi-host string keeps the first listed.
	var port int
	if err := queryRow(step(t, 10*time.Second), r.MultiHostDSN("postgres"), "SELECT inet_server_port()", nil, &port); err != nil {
		t.Fatal(err)
	}
	if port != primary.Port() {
		t.Errorf("multi-host DSN reached port %d; want the first listed writable one, %d", port, primary.Port())
	}
}

// TestReplicaSetSynchronous: a commit waits for the synchronous standby, so
// with it frozen the commit hangs, and it goes through once thawed.
func TestReplicaSetSynchronous(t *testing.T) {
	r := startReplicaSet(t, ReplicaOptions{Standbys: 1, Synchronous: true})
	primary, standby := r.Nodes()[0], r.Nodes()[1]
	mustExec(t, primary, "CREATE TABLE t (v int)")

	if err := standby.Freeze(); err != nil {
		t.Fatal(err)
	}
	err := execSQL(step(t, 2*time.Second), primary.DSN("postgres"), "INSERT INTO t VALUES (1)")
	if !errors.Is(err, context.DeadlineExceeded) {
		standby.Thaw()
		t.Fatalf("commit with the synchronous standby frozen: %v; want it to hang until the deadline", err)
	}
	if err := standby.Thaw(); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	mustExec(t, primary, "INSERT INTO t VALUES (2)")
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("commit after Thaw took %v", d)
	}
	// The hung commit was committed locally when its wait was cancelled; both
	// rows are on the standby.
	waitRows(t, standby, "SELECT count(*) FROM t", 2)
}

// TestReplicaSetFollow: after a failover the other standby follows the new
// primary.
func TestReplicaSetFollow(t *testing.T) {
	r := startReplicaSet(t, ReplicaOptions{Standbys: 2})
	n0, n1, n2 := r.Nodes()[0], r.Nodes()[1], r.Nodes()[2]
	mustExec(t, n0, "CREATE TABLE t (v int)")
	waitRows(t, n2, "SELECT count(*) FROM pg_class WHERE relname = 't'", 1)
	if err := n0.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n1.Promote(step(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := n2.Follow(step(t, 30*time.Second), n1); err != nil {
		t.Fatal(err)
	}
	t.Logf("follow: %v", time.Since(begin).Round(time.Millisecond))
	mustExec(t, n1, "INSERT INTO t VALUES (1)")
	waitRows(t, n2, "SELECT count(*) FROM t", 1)
	if tl, sb := position(t, n2); tl != 2 || !sb {
		t.Errorf("n2: timeline %d, standby %v; want a standby on timeline 2", tl, sb)
	}
}
