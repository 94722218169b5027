package pgcluster

// Cutting a standby off its upstream, for tests of a failover that loses the
// WAL tail.
//
// The cut stops the upstream's walsender for the standby, not the standby's
// walreceiver. A stopped walreceiver would hold up its own promotion: the
// startup process ends recovery by sending the walreceiver SIGTERM and waiting
// for it to exit, which a stopped process never does, so the promotion (by hand
// or by Patroni) would hang until the walreceiver is continued, and continuing it
// lets it read the WAL waiting in its socket's buffer, the very tail the cut was
// to lose. Changing primary_conninfo instead works for the replica set, but
// Patroni puts its own back. A stopped walsender sends nothing more; what it had
// sent before is in the standby's socket buffer and is received at once, so the
// cut falls exactly at the moment CutReplication returns. The standby, whose
// wal_receiver_timeout is 0, waits forever rather than reconnecting (which would
// give it a fresh walsender).
//
// A process stopped in the instant it holds a spinlock in shared memory would
// block others on that lock; the walsender holds them for a few instructions at
// a time, a risk small enough for tests.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"
)

// walsenderCut is a walsender stopped by CutReplication.
type walsenderCut struct {
	pid   int
	start uint64 // its start time, so that a reused pid is not continued
}

// stopWalsender finds where the standby at standbyDSN streams from (a port that
// known must accept), then that server's walsender for application_name name,
// and stops it.
func stopWalsender(ctx context.Context, standbyDSN, name string, known func(port int) bool) (*walsenderCut, error) {
	var port int32
	err := poll(ctx, name+" streaming before the cut", 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		err := queryRow(ctx, standbyDSN, "SELECT coalesce((SELECT sender_port FROM pg_stat_wal_receiver WHERE status = 'streaming'), 0)", nil, &port)
		return err == nil && port != 0, err
	})
	if err != nil {
		return nil, err
	}
	if !known(int(port)) {
		return nil, fmt.Errorf("pgcluster: %s streams from port %d, which is none of the cluster's nodes", name, port)
	}
	var pid int32
	// A stale walsender of an earlier connection of the same standby may linger;
	// the newest one is the live one.
	if err := queryRow(ctx, nodeDSN(int(port), "postgres"), `SELECT pid FROM pg_stat_replication
		WHERE application_name = $1 ORDER BY backend_start DESC LIMIT 1`, []any{name}, &pid); err != nil {
		return nil, fmt.Errorf("pgcluster: the walsender for %s on port %d: %w", name, port, err)
	}
	all, err := listProcs()
	if err != nil {
		return nil, err
	}
	info, ok := all[int(pid)]
	if !ok {
		return nil, fmt.Errorf("pgcluster: the walsender for %s (pid %d) is gone", name, pid)
	}
	if err := syscall.Kill(int(pid), syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pgcluster: stop the walsender for %s: %w", name, err)
	}
	if err := waitStopped(map[int]procInfo{int(pid): info}); err != nil {
		return nil, err
	}
	return &walsenderCut{pid: int(pid), start: info.start}, nil
}

// restore continues the walsender, if it is still the process that was stopped.
func (c *walsenderCut) restore() error {
	all, err := listProcs()
	if err != nil {
		return err
	}
	if p, ok := all[c.pid]; !ok || p.start != c.start || p.gone() {
		return nil // died with its server
	}
	if err := syscall.Kill(c.pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pgcluster: continue walsender %d: %w", c.pid, err)
	}
	return nil
}

// cutOff is CutReplication of a node named name at dsn, whose cluster's servers
// listen on ports; mu guards the node's cut.
func cutOff(ctx context.Context, mu *sync.Mutex, cut **walsenderCut, name, dsn string, ports []int) error {
	mu.Lock()
	defer mu.Unlock()
	if *cut != nil {
		return fmt.Errorf("pgcluster: %s is already cut off", name)
	}
	c, err := stopWalsender(ctx, dsn, name, func(port int) bool { return slices.Contains(ports, port) })
	if err != nil {
		return err
	}
	*cut = c
	return nil
}

// restoreCut is RestoreReplication: it ends the node's cut, if any.
func restoreCut(mu *sync.Mutex, cut **walsenderCut) error {
	mu.Lock()
	defer mu.Unlock()
	if *cut == nil {
		return nil
	}
	err := (*cut).restore()
	*cut = nil
	return err
}
