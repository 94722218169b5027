package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func startPatroni(t *testing.T, o PatroniOptions) *Patroni {
	t.Helper()
	begin := time.Now()
	p, err := StartPatroni(step(t, 90*time.Second), o)
	if (errors.Is(err, ErrNoPatroni) || errors.Is(err, ErrNoServer)) && !ciMode() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	// Registered after Stop, so it runs first: a failed test shows what each
	// node's Patroni and postgres said before the data is deleted.
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range p.Nodes() {
				t.Logf("%s: the end of patroni.log:\n%s", n.Name(), n.logTail(60))
			}
		}
	})
	t.Logf("Patroni cluster of %d up in %v", len(p.Nodes()), time.Since(begin).Round(time.Millisecond))
	return p
}

// TestPatroniFailover: the leader crashed, a replica takes over on a new
// timeline, a patronictl failover moves the lead again, and the crashed node
// comes back as a replica of the newest timeline (rewound).
func TestPatroniFailover(t *testing.T) {
	p := startPatroni(t, PatroniOptions{Nodes: 3})
	leader, err := p.Leader(step(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := execSQL(step(t, 10*time.Second), leader.DSN("postgres"), "CREATE TABLE t (v int)", "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	tl1, _ := position(t, leader)
	// Asynchronous: every replica has the row before the crash, so the node
	// promoted has the table the test writes next.
	for _, n := range p.Nodes() {
		if n != leader {
			waitRows(t, n, "SELECT count(*) FROM t", 1)
		}
	}

	begin := time.Now()
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	next, err := p.WaitNewLeader(step(t, 60*time.Second), leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s killed: %s takes writes after %v", leader.Name(), next.Name(), time.Since(begin).Round(time.Millisecond))
	tl2, standby := position(t, next)
	if tl2 <= tl1 || standby {
		t.Fatalf("new leader %s: timeline %d (standby %v); want a primary above timeline %d", next.Name(), tl2, standby, tl1)
	}
	// The multi-host string skips the dead node and the replica.
	if err := execSQL(step(t, 10*time.Second), p.MultiHostDSN("postgres"), "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}

	var third *PatroniNode
	for _, n := range p.Nodes() {
		if n != leader && n != next {
			third = n
		}
	}
	begin = time.Now()
	if err := third.WaitStreaming(step(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s streams from %s after %v more", third.Name(), next.Name(), time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	if err := p.Failover(step(t, 60*time.Second), third); err != nil {
		t.Fatal(err)
	}
	t.Logf("patronictl failover to %s: %v", third.Name(), time.Since(begin).Round(time.Millisecond))
	tl3, _ := position(t, third)
	if tl3 <= tl2 {
		t.Fatalf("after the failover %s writes on timeline %d; want above %d", third.Name(), tl3, tl2)
	}

	begin = time.Now()
	if err := leader.Start(step(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := leader.WaitStreaming(step(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("old leader %s restarted and streaming after %v", leader.Name(), time.Since(begin).Round(time.Millisecond))
	if tl, standby := position(t, leader); tl != tl3 || !standby {
		t.Errorf("old leader back: timeline %d (standby %v); want a replica on timeline %d", tl, standby, tl3)
	}
	var c int64
	if err := queryRow(step(t, 10*time.Second), leader.DSN("postgres"), "SELECT count(*) FROM t", nil, &c); err != nil || c != 2 {
		t.Errorf("old leader back: %d rows, %v; want 2", c, err)
	}
}

// TestPatroniFrozenLeader: the replica cut off, a commit on the leader, the
// leader frozen like a hung VM; the replica takes over without that commit, and
// the old leader, thawed, is demoted and rewound into a replica of the new
// timeline, the commit gone.
func TestPatroniFrozenLeader(t *testing.T) {
	p := startPatroni(t, PatroniOptions{Nodes: 2})
	leader, err := p.Leader(step(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	replica := p.Nodes()[0]
	if replica == leader {
		replica = p.Nodes()[1]
	}
	if err := execSQL(step(t, 10*time.Second), leader.DSN("postgres"), "CREATE TABLE t (v int)", "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	tl1, _ := position(t, leader)
	// Asynchronous: the replica must have the table and its row before the
	// cut, or the new leader has neither and the test measures nothing.
	waitRows(t, replica, "SELECT count(*) FROM t", 1)
	if err := replica.CutReplication(step(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := execSQL(step(t, 10*time.Second), leader.DSN("postgres"), "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}

	begin := time.Now()
	if err := leader.Freeze(); err != nil {
		t.Fatal(err)
	}
	next, err := p.WaitNewLeader(step(t, 60*time.Second), leader)
	if err != nil {
		leader.Thaw()
		t.Fatal(err)
	}
	t.Logf("leader %s frozen: %s takes writes after %v", leader.Name(), next.Name(), time.Since(begin).Round(time.Millisecond))
	if tl, _ := position(t, next); tl <= tl1 {
		t.Errorf("new leader on timeline %d; want above %d", tl, tl1)
	}
	var c int64
	if err := queryRow(step(t, 10*time.Second), next.DSN("postgres"), "SELECT count(*) FROM t", nil, &c); err != nil || c != 1 {
		t.Errorf("new leader: %d rows, %v; want 1 (the commit after the cut lost)", c, err)
	}
	if err := replica.RestoreReplication(); err != nil {
		t.Error(err)
	}

	begin = time.Now()
	if err := leader.Thaw(); err != nil {
		t.Fatal(err)
	}
	// The thawed node is demoted and rewound — or, in a race Patroni 3.0.2 has
	// not closed, takes the leader key back from the node that had just been
	// promoted, seconds after thawing. That node is then on a newer timeline
	// than the leader and cannot follow it ("highest timeline 1 of the primary
	// is behind recovery timeline 2"), and Patroni leaves it so: the operator
	// rebuilds it (Reinit).
	now, err := settle(t, p, leader, next)
	if err != nil {
		t.Fatal(err)
	}
	if now == next {
		t.Logf("old leader %s thawed: demoted, streams from %s after %v", leader.Name(), next.Name(), time.Since(begin).Round(time.Millisecond))
		// Patroni may start the demoted node as a standby before it finds the
		// timelines diverged, stops it and rewinds it: for that moment it streams
		// with the lost commit still in its data. Rewound, it has the new leader's
		// one row; it must get there.
		deadline := time.Now().Add(60 * time.Second)
		for {
			err := queryRow(step(t, 10*time.Second), leader.DSN("postgres"), "SELECT count(*) FROM t", nil, &c)
			if err == nil && c == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("old leader rewound: %d rows, %v; want 1 (60 s after it first streamed)", c, err)
				break
			}
			time.Sleep(time.Second)
		}
		return
	}
	t.Logf("old leader %s thawed: took the leader key back from %s, which was rebuilt and streams after %v", leader.Name(), next.Name(), time.Since(begin).Round(time.Millisecond))
	if tl, _ := position(t, leader); tl != tl1 {
		t.Errorf("old leader leads again on timeline %d; want its own %d", tl, tl1)
	}
	if err := queryRow(step(t, 10*time.Second), next.DSN("postgres"), "SELECT count(*) FROM t", nil, &c); err != nil || c != 2 {
		t.Errorf("%s rebuilt: %d rows, %v; want the leader's 2", next.Name(), c, err)
	}
}

// settle waits, after a frozen leader (old) was thawed, until one of the two
// nodes leads and the other streams from it, and returns the leader. When old
// holds the leader key again and next has not streamed for 15 s, next is
// rebuilt from it (see TestPatroniFrozenLeader).
func settle(t *testing.T, p *Patroni, old, next *PatroniNode) (*PatroniNode, error) {
	t.Helper()
	ctx := step(t, 180*time.Second)
	var oldLeads time.Time // when old was first seen leading again
	for {
		l, err := p.Leader(ctx)
		if err == nil && l.writable(ctx) == nil {
			o := next
			if l == next {
				o = old
			}
			probe, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = o.WaitStreaming(probe)
			cancel()
			if err == nil {
				return l, nil
			}
			switch {
			case l != old:
				oldLeads = time.Time{}
			case oldLeads.IsZero():
				oldLeads = time.Now()
			case time.Since(oldLeads) > 15*time.Second:
				if err := p.Reinit(ctx, next); err != nil {
					return nil, err
				}
				return old, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pgcluster: the cluster did not settle after the thaw: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// TestPatroniSynchronous: under synchronous_mode_strict a commit waits for the
// synchronous standby, so with its replication cut the commit hangs, and a
// switchover hands the lead to that standby.
func TestPatroniSynchronous(t *testing.T) {
	p := startPatroni(t, PatroniOptions{Nodes: 2, SynchronousMode: true, SynchronousModeStrict: true})
	leader, err := p.Leader(step(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	members, err := p.Members(step(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var standby *PatroniNode
	for _, m := range members {
		for _, n := range p.Nodes() {
			if m.Role == "sync_standby" && m.Name == n.Name() {
				standby = n
			}
		}
	}
	if standby == nil || standby == leader {
		t.Fatalf("no synchronous standby besides leader %s: %+v", leader.Name(), members)
	}
	if err := execSQL(step(t, 10*time.Second), leader.DSN("postgres"), "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	if err := standby.CutReplication(step(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	err = execSQL(step(t, 2*time.Second), leader.DSN("postgres"), "INSERT INTO t VALUES (1)")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("commit with the synchronous standby cut off: %v; want it to hang until the deadline", err)
	}
	if err := standby.RestoreReplication(); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := p.Switchover(step(t, 60*time.Second), standby); err != nil {
		t.Fatal(err)
	}
	t.Logf("patronictl switchover to %s: %v", standby.Name(), time.Since(begin).Round(time.Millisecond))
	var c int64
	if err := queryRow(step(t, 10*time.Second), standby.DSN("postgres"), "SELECT count(*) FROM t", nil, &c); err != nil || c != 1 {
		t.Errorf("new leader: %d rows, %v; want the row whose commit waited for it", c, err)
	}
}
