package pgcluster

// Process helpers shared by the replica-set and Patroni harnesses: one run of a
// child process, and signals to a whole process tree (a postmaster and its
// backends, or Patroni and what it spawned).
//
// A tree cannot be signalled through a process group: every PostgreSQL child
// process calls setsid() at start (so that the postmaster can signal whatever
// the child itself spawns), and Patroni starts its postmaster in a new session
// too. So the tree is found by walking parent links in /proc.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// startServer starts cmd and reaps it in the background.
func startServer(cmd *exec.Cmd) (*server, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// procInfo is what /proc/<pid>/stat says about a process.
type procInfo struct {
	ppid  int
	state byte   // R, S, D, T (stopped), t, Z (zombie), X, ...
	start uint64 // start time in clock ticks since boot: with the pid, an identity
}

// gone reports whether a process no longer runs (a zombie waits only for its
// parent, which may be an init that never reaps).
func (p procInfo) gone() bool { return p.state == 'Z' || p.state == 'X' }

// tree returns roots and all their living descendants.
func tree(roots ...int) (map[int]procInfo, error) {
	all, err := listProcs()
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for pid, p := range all {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	out := map[int]procInfo{}
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, ok := all[pid]
		if _, seen := out[pid]; seen || !ok || p.gone() {
			continue
		}
		out[pid] = p
		queue = append(queue, children[pid]...)
	}
	return out, nil
}

// freezeTree stops roots and every descendant with SIGSTOP. Roots go first so
// that they cannot fork while the tree is walked; a child forked during the walk
// is found by the next pass, which runs once everything signalled has really
// stopped (kill only queues the signal), until a pass finds nothing new.
func freezeTree(roots ...int) error {
	stopped := map[int]bool{}
	first := map[int]procInfo{}
	all, err := listProcs()
	if err != nil {
		return err
	}
	for _, pid := range roots {
		if p, ok := all[pid]; ok && !p.gone() {
			first[pid] = p
			stopped[pid] = true
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("pgcluster: SIGSTOP %d: %w", pid, err)
			}
		}
	}
	if err := waitStopped(first); err != nil {
		return err
	}
	for pass := 0; pass < 50; pass++ {
		procs, err := tree(roots...)
		if err != nil {
			return err
		}
		fresh := 0
		for pid := range procs {
			if !stopped[pid] {
				fresh++
				stopped[pid] = true
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
					return fmt.Errorf("pgcluster: SIGSTOP %d: %w", pid, err)
				}
			}
		}
		if fresh == 0 {
			return nil
		}
		if err := waitStopped(procs); err != nil {
			return err
		}
	}
	return errors.New("pgcluster: the process tree kept growing while being frozen")
}

// waitStopped waits until every process in procs is stopped or gone.
func waitStopped(procs map[int]procInfo) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		all, err := listProcs()
		if err != nil {
			return err
		}
		pending := 0
		for pid, p := range procs {
			q, ok := all[pid]
			if ok && q.start == p.start && !q.gone() && q.state != 'T' && q.state != 't' {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgcluster: %d processes did not stop within 5s of SIGSTOP", pending)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// thawTree continues roots and every descendant with SIGCONT.
func thawTree(roots ...int) error {
	procs, err := tree(roots...)
	if err != nil {
		return err
	}
	for pid := range procs {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgcluster: SIGCONT %d: %w", pid, err)
		}
	}
	return nil
}

// killTree kills roots and every descendant with SIGKILL, as a crash of the
// machine would: frozen first, so that no process sees another die and reacts
// (a postmaster whose child is killed starts crash recovery; Patroni whose
// postgres died restarts it), then killed, then waited for.
func killTree(ctx context.Context, roots ...int) error {
	if err := freezeTree(roots...); err != nil {
		return err
	}
	procs, err := tree(roots...)
	if err != nil {
		return err
	}
	for pid := range procs {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgcluster: SIGKILL %d: %w", pid, err)
		}
	}
	return waitGone(ctx, procs)
}

// waitGone waits until no process in procs runs any more.
func waitGone(ctx context.Context, procs map[int]procInfo) error {
	for {
		all, err := listProcs()
		if err != nil {
			return err
		}
		alive := 0
		for pid, p := range procs {
			if q, ok := all[pid]; ok && q.start == p.start && !q.gone() {
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: %d killed processes still running: %w", alive, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// poll calls f every interval until it reports done or fails, or ctx ends; the
// error then names what was awaited and f's last complaint.
func poll(ctx context.Context, what string, interval time.Duration, f func(ctx context.Context) (bool, error)) error {
	var last error
	for {
		done, err := f(ctx)
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("pgcluster: waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("pgcluster: waiting for %s: %w", what, ctx.Err())
		case <-time.After(interval):
		}
	}
}
