package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// worker is a running worker process.
type worker struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan workerReply
	stderr  *syncBuffer
	mu      sync.Mutex
	paused  bool
}

func startWorker(ctx context.Context, exe, name, driver, dsn, policy string, lease time.Duration) (*worker, error) {
	cmd := exec.CommandContext(ctx, exe, WorkerCommand, "--driver", driver, "--policy", policy, "--lease", lease.String())
	cmd.Env = append(os.Environ(), demoDSNEnv+"="+dsn)
	cmd.SysProcAttr = workerSysProcAttr()
	cmd.WaitDelay = 5 * time.Second
	w := &worker{name: name, cmd: cmd, replies: make(chan workerReply, 4), stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting worker %s: %w", name, err)
	}
	go func() {
		defer close(w.replies)
		in := bufio.NewScanner(stdout)
		for in.Scan() {
			var r workerReply
			if err := json.Unmarshal(in.Bytes(), &r); err != nil {
				r = workerReply{Op: "?", Error: "bad reply: " + in.Text()}
			}
			w.replies <- r
		}
	}()
	return w, nil
}

// do sends one command and waits for its reply.
func (w *worker) do(ctx context.Context, cmd string) (workerReply, error) {
	if _, err := io.WriteString(w.stdin, cmd+"\n"); err != nil {
		return workerReply{}, fmt.Errorf("worker %s: %w%s", w.name, err, w.stderr.tail())
	}
	return w.await(ctx)
}

func (w *worker) await(ctx context.Context) (workerReply, error) {
	t := time.NewTimer(demoReplyTimeout)
	defer t.Stop()
	select {
	case r, ok := <-w.replies:
		if !ok {
			return r, fmt.Errorf("worker %s exited%s", w.name, w.stderr.tail())
		}
		return r, nil
	case <-t.C:
		return workerReply{}, fmt.Errorf("worker %s did not answer within %v%s", w.name, demoReplyTimeout, w.stderr.tail())
	case <-ctx.Done():
		return workerReply{}, context.Cause(ctx)
	}
}

func (w *worker) pause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := stopProcess(w.cmd.Process); err != nil {
		return fmt.Errorf("pausing worker %s: %w", w.name, err)
	}
	w.paused = true
	return nil
}

func (w *worker) resume() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := continueProcess(w.cmd.Process); err != nil {
		return fmt.Errorf("resuming worker %s: %w", w.name, err)
	}
	w.paused = false
	return nil
}

// close ends the worker: end of input makes it exit; one that does not is killed.
func (w *worker) close() {
	w.mu.Lock()
	if w.paused {
		continueProcess(w.cmd.Process)
		w.paused = false
	}
	w.mu.Unlock()
	w.stdin.Close()
	done := make(chan struct{})
	go func() {
		w.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.cmd.Process.Kill()
		<-done
	}
}

// syncBuffer collects a worker's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.TrimSpace(s.b.String())
	if out == "" {
		return ""
	}
	if len(out) > 2000 {
		out = "…" + out[len(out)-2000:]
	}
	return "; its stderr:\n" + out
}
