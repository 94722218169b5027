package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

const demoUsage = `Usage: sqlfence demo [--dsn DSN] [--json]

Plays the story of the background document with real processes, twice: once with
the plain pgx driver, once with sqlfence, and prints what happened side by side.

  The inventory holds 10 widgets. Job 1 ships 3, job 2 ships 2: 5 should be left.
  Worker A claims job 1 (epoch 1) and reads the count, 10. A is paused with SIGSTOP
  until its lease runs out. Worker B claims job 1 (epoch 2), writes 7 and completes
  it, then claims job 2 (epoch 3) and writes 5. A is resumed with SIGCONT and writes
  the 7 it computed before the pause.

With plain pgx, A's write lands: the count says 7, two widgets more than exist. With
sqlfence, A's write is fenced: the row carries epoch 3, A's epoch is 1. Each worker
is this binary, re-executed; the job handler is the same code under both drivers.

Without --dsn the demo starts a throwaway PostgreSQL (server binaries from PATH or
/usr/lib/postgresql/*/bin); with --dsn it works in a schema of its own, dropped at the
end.

Exit status: 0 sqlfence prevented the lost update, 1 it did not (or plain pgx did not
lose it), 2 setup error (no PostgreSQL, a database that does not answer).

Flags:
`

const (
	demoStartQuantity = 10
	demoReplyTimeout  = 15 * time.Second
)

// demoJobs are the story's jobs: id and how many widgets each ships.
var demoJobs = []struct{ id, ship int64 }{{1, 3}, {2, 2}}

type demoStep struct {
	Step        string `json:"step"`
	Worker      string `json:"worker,omitempty"`
	Result      string `json:"result"`
	Epoch       int64  `json:"epoch,omitempty"`
	Quantity    *int64 `json:"quantity,omitempty"`
	Fenced      bool   `json:"fenced,omitempty"`
	StoredEpoch int64  `json:"stored_epoch,omitempty"`
}

type demoFencedWrite struct {
	Worker      string `json:"worker"`
	Job         int64  `json:"job"`
	Epoch       int64  `json:"epoch"`
	StoredEpoch int64  `json:"stored_epoch"`
	Cancelled   string `json:"handler_cancelled_with,omitempty"`
}

type demoRun struct {
	Driver       string            `json:"driver"`
	Final        int64             `json:"final_quantity"`
	Expected     int64             `json:"expected_quantity"`
	LostUpdate   bool              `json:"lost_update"`
	FencedWrites []demoFencedWrite `json:"fenced_writes"`
	Steps        []demoStep        `json:"steps"`
}

type demoReport struct {
	Prevented       bool      `json:"prevented"`
	Expected        int64     `json:"expected_quantity"`
	Runs            []demoRun `json:"runs"`
	FencedStatement string    `json:"fenced_statement"`
	Server          string    `json:"server"`
	LeaseMillis     int64     `json:"lease_ms"`
	DurationMillis  int64     `json:"duration_ms"`
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	f := newFlags("demo", demoUsage)
	dsn := f.String("dsn", "", "use this database instead of a throwaway PostgreSQL (needs CREATE on the database)")
	asJSON := f.Bool("json", false, "print the result as JSON")
	lease := f.Duration("lease", time.Second, "the workers' lease (A is paused past it)")
	connectTimeout := f.Duration("connect-timeout", defaultConnectTimeout, "how long to wait for --dsn to answer")
	pos, code, done := f.parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		return f.usageError(stderr, "unexpected argument %q", pos[0])
	}
	if *lease < 100*time.Millisecond || *lease > time.Minute {
		return f.usageError(stderr, "--lease must be between 100ms and 1m")
	}
	if !canPause() {
		return fail(stderr, "demo", errors.New("the demo pauses a worker with SIGSTOP, which this system does not have; run it on Linux or macOS"))
	}
	started := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	exe, err := os.Executable()
	if err != nil {
		return fail(stderr, "demo", fmt.Errorf("cannot find this program to start the workers: %w", err))
	}
	server := *dsn
	if server == "" {
		fmt.Fprintln(stderr, "sqlfence demo: starting a throwaway PostgreSQL (give --dsn to use your own)…")
		cluster, err := pgtest.Start(ctx)
		if errors.Is(err, pgtest.ErrNoServer) {
			return fail(stderr, "demo", errors.New("the demo needs a PostgreSQL server: install its server binaries "+
				"(Debian/Ubuntu: apt install postgresql; macOS: brew install postgresql) so that initdb and postgres are on PATH "+
				"or under /usr/lib/postgresql/*/bin, or give --dsn postgres://user@host/db"))
		}
		if err != nil {
			return fail(stderr, "demo", err)
		}
		defer cluster.Stop()
		server = cluster.DSN()
	}
	admin, err := connect(ctx, server, *connectTimeout)
	if err != nil {
		return fail(stderr, "demo", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))

	dir, err := os.MkdirTemp("", "sqlfence-demo-")
	if err != nil {
		return fail(stderr, "demo", err)
	}
	defer os.RemoveAll(dir)
	policyPath := filepath.Join(dir, "sqlfence.yaml")
	if err := os.WriteFile(policyPath, []byte(demoPolicy), 0o644); err != nil {
		return fail(stderr, "demo", err)
	}
	pol, err := sqlfence.LoadPolicy(policyPath)
	if err != nil {
		return fail(stderr, "demo", err)
	}

	d := &demo{exe: exe, dsn: server, policy: policyPath, lease: *lease, connectTimeout: *connectTimeout}
	rep := demoReport{Expected: demoStartQuantity, FencedStatement: pol.Plan(demoWriteSQL).Fenced, LeaseMillis: lease.Milliseconds()}
	for _, j := range demoJobs {
		rep.Expected -= j.ship
	}
	admin.QueryRow(ctx, "SELECT 'PostgreSQL ' || split_part(current_setting('server_version'), ' ', 1)").Scan(&rep.Server)
	// The two runs are independent (each has its own schema, sequence and workers), so
	// they play at the same time: the demo waits out one lease, not two.
	drivers := []string{"pgx", "sqlfence"}
	rep.Runs = make([]demoRun, len(drivers))
	errs := make([]error, len(drivers))
	var wg sync.WaitGroup
	for i, driver := range drivers {
		wg.Go(func() { rep.Runs[i], errs[i] = d.story(ctx, driver) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
			}
			return fail(stderr, "demo", fmt.Errorf("the %s run: %w", drivers[i], err))
		}
	}
	plain, fenced := rep.Runs[0], rep.Runs[1]
	rep.Prevented = plain.LostUpdate && !fenced.LostUpdate && len(fenced.FencedWrites) > 0
	rep.DurationMillis = time.Since(started).Milliseconds()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(rep)
	} else {
		writeDemoText(stdout, &rep)
	}
	if !rep.Prevented {
		return exitFindings
	}
	return exitOK
}

const demoPolicy = `# The demo's sqlfence policy: inventory is protected; jobs is the arbiter.
version: 1
epoch_column: writer_epoch
mode: strict
tables:
  - name: inventory
`

type demo struct {
	exe            string
	dsn            string
	policy         string
	lease          time.Duration
	connectTimeout time.Duration
}

// story plays the story once with one driver, in a schema of its own.
func (d *demo) story(ctx context.Context, driver string) (run demoRun, err error) {
	admin, err := connect(ctx, d.dsn, d.connectTimeout)
	if err != nil {
		return run, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var rnd [4]byte
	rand.Read(rnd[:])
	schema := "sqlfence_demo_" + driver + "_" + hex.EncodeToString(rnd[:])
	if _, err := admin.Exec(ctx, demoSchemaSQL(schema)); err != nil {
		return run, fmt.Errorf("creating the demo's tables: %w", err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE")
	run = demoRun{Driver: driver, Expected: demoStartQuantity, FencedWrites: []demoFencedWrite{}}
	for _, j := range demoJobs {
		run.Expected -= j.ship
	}

	dsn := withParam(d.dsn, "search_path", schema)
	var workers [2]*worker
	for i, name := range []string{"A", "B"} {
		if workers[i], err = startWorker(ctx, d.exe, name, driver, dsn, d.policy, d.lease); err != nil {
			return run, err
		}
		defer workers[i].close()
	}
	a, b := workers[0], workers[1]
	for _, w := range workers {
		r, err := w.await(ctx)
		if err == nil && r.Error != "" {
			err = errors.New(r.Error)
		}
		if err != nil {
			return run, fmt.Errorf("worker %s did not start: %w", w.name, err)
		}
	}

	add := func(s demoStep) { run.Steps = append(run.Steps, s) }
	qty := func(n int64) *int64 { return &n }
	// do runs a command that must succeed.
	do := func(w *worker, cmd string) (workerReply, error) {
		r, err := w.do(ctx, cmd)
		if err == nil && r.Error != "" {
			err = fmt.Errorf("worker %s: %s: %s", w.name, cmd, r.Error)
		}
		return r, err
	}
	claim := func(w *worker, job int64, label string) (workerReply, error) {
		r, err := do(w, fmt.Sprint("claim ", job))
		if err != nil {
			return r, err
		}
		s := demoStep{Step: label, Worker: w.name}
		switch {
		case r.Claimed:
			s.Result, s.Epoch = fmt.Sprintf("epoch %d", r.Epoch), r.Epoch
		case r.LeaseLive:
			s.Result = fmt.Sprintf("refused: epoch %d holds it", r.HolderEpoch)
		default:
			s.Result = "refused"
		}
		add(s)
		return r, nil
	}
	// handle is B's whole execution of one job: claim, read, write, complete.
	handle := func(w *worker, job, ship int64) error {
		r, err := claim(w, job, fmt.Sprintf("%s claims job %d (ship %d)", w.name, job, ship))
		if err != nil {
			return err
		}
		if !r.Claimed {
			return fmt.Errorf("worker %s could not claim job %d", w.name, job)
		}
		read, err := do(w, "read")
		if err != nil {
			return err
		}
		wr, err := do(w, "write")
		if err != nil {
			return err
		}
		s := demoStep{Step: fmt.Sprintf("%s reads the count, writes it - %d", w.name, ship), Worker: w.name, Quantity: qty(wr.Wrote),
			Result: fmt.Sprintf("%d -> %d", read.Quantity, wr.Wrote)}
		if wr.Fenced {
			s.Result, s.Fenced, s.StoredEpoch = fmt.Sprintf("%d -> FENCED (row has epoch %d)", read.Quantity, wr.StoredEpoch), true, wr.StoredEpoch
		}
		add(s)
		c, err := do(w, "complete")
		if err != nil {
			return err
		}
		add(demoStep{Step: fmt.Sprintf("%s completes job %d", w.name, job), Worker: w.name, Result: completed(c)})
		return nil
	}

	// A claims job 1 and reads the count, then is paused mid-handler.
	ra, err := claim(a, demoJobs[0].id, fmt.Sprintf("A claims job 1 (ship %d)", demoJobs[0].ship))
	if err != nil {
		return run, err
	}
	if !ra.Claimed {
		return run, errors.New("worker A could not claim job 1")
	}
	readA, err := do(a, "read")
	if err != nil {
		return run, err
	}
	add(demoStep{Step: "A reads the count", Worker: "A", Result: fmt.Sprint(readA.Quantity), Quantity: qty(readA.Quantity)})
	if err := a.pause(); err != nil {
		return run, err
	}
	add(demoStep{Step: "A is paused (SIGSTOP)", Worker: "A", Result: "stopped"})

	// While A's lease is live, nobody else gets job 1.
	rb, err := claim(b, demoJobs[0].id, "B tries to claim job 1")
	if err != nil {
		return run, err
	}
	if rb.Claimed {
		return run, fmt.Errorf("A's lease (%v) ran out before B tried to claim job 1: this machine is too busy for that lease; run the demo with a longer --lease", d.lease)
	}
	// Wait for the lease to run out on the arbiter's clock.
	waited := time.Now()
	if _, err := admin.Exec(ctx, fmt.Sprintf(
		"SELECT pg_sleep_until(lease_expires_at + interval '20 milliseconds') FROM %s.jobs WHERE id = $1", schema), demoJobs[0].id); err != nil {
		return run, fmt.Errorf("waiting for A's lease to run out: %w", err)
	}
	add(demoStep{Step: "A's lease runs out", Result: fmt.Sprintf("after %.1fs", time.Since(waited).Seconds())})

	for _, j := range demoJobs {
		if err := handle(b, j.id, j.ship); err != nil {
			return run, err
		}
	}

	// A wakes and finishes its handler with the count it read before the pause.
	if err := a.resume(); err != nil {
		return run, err
	}
	wa, err := do(a, "write")
	if err != nil {
		return run, err
	}
	s := demoStep{Step: fmt.Sprintf("A resumes (SIGCONT), writes %d-%d", readA.Quantity, demoJobs[0].ship), Worker: "A", Quantity: qty(wa.Wrote)}
	if wa.Fenced {
		s.Result, s.Fenced, s.StoredEpoch = fmt.Sprintf("FENCED: row has epoch %d > %d", wa.StoredEpoch, ra.Epoch), true, wa.StoredEpoch
		run.FencedWrites = append(run.FencedWrites, demoFencedWrite{Worker: "A", Job: ra.Job, Epoch: ra.Epoch, StoredEpoch: wa.StoredEpoch, Cancelled: wa.Cancelled})
	} else {
		s.Result = fmt.Sprintf("wrote %d", wa.Wrote)
	}
	add(s)
	step := demoStep{Step: "A completes job 1", Worker: "A"}
	if wa.Fenced {
		step.Result = "skipped: handler cancelled"
	} else {
		c, err := do(a, "complete")
		if err != nil {
			return run, err
		}
		step.Result = completed(c)
	}
	add(step)

	if err := admin.QueryRow(ctx, fmt.Sprintf("SELECT quantity FROM %s.inventory WHERE sku = 'widget'", schema)).Scan(&run.Final); err != nil {
		return run, err
	}
	run.LostUpdate = run.Final != run.Expected
	return run, nil
}

func completed(r workerReply) string {
	if r.Completed {
		return "done"
	}
	return "rejected: no longer its claim"
}

func demoSchemaSQL(schema string) string {
	return fmt.Sprintf(`
CREATE SCHEMA %[1]s;
CREATE SEQUENCE %[1]s.sqlfence_epoch;
CREATE TABLE %[1]s.jobs (
	id               bigint PRIMARY KEY,
	sku              text NOT NULL,
	delta            int NOT NULL,
	status           text NOT NULL DEFAULT 'pending',
	lease_epoch      bigint NOT NULL DEFAULT 0,
	lease_expires_at timestamptz,
	available_at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE %[1]s.inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	writer_epoch bigint NOT NULL DEFAULT 0
);
INSERT INTO %[1]s.inventory (sku, quantity) VALUES ('widget', %[2]d);
INSERT INTO %[1]s.jobs (id, sku, delta) VALUES (%[3]d, 'widget', -%[4]d), (%[5]d, 'widget', -%[6]d);
`, schema, demoStartQuantity, demoJobs[0].id, demoJobs[0].ship, demoJobs[1].id, demoJobs[1].ship)
}

func writeDemoText(w io.Writer, rep *demoReport) {
	plain, fenced := rep.Runs[0], rep.Runs[1]
	fmt.Fprintf(w, `sqlfence demo: a paused worker wakes up after its replacement finished (%s)

  The inventory holds %d widgets. Job 1 ships %d, job 2 ships %d: %d should be left.
  Workers A and B are separate processes; the job handler reads the count, computes
  the new one, and writes it back. Leases last %v; epochs come from one sequence.

`, rep.Server, demoStartQuantity, demoJobs[0].ship, demoJobs[1].ship, rep.Expected, time.Duration(rep.LeaseMillis)*time.Millisecond)
	const c0, c1 = 37, 30
	row := func(label, a, b string) { fmt.Fprintf(w, "  %-*s %-*s %s\n", c0, label, c1, a, b) }
	row("", "plain pgx", "sqlfence")
	row("", strings.Repeat("-", 9), strings.Repeat("-", 8))
	for i := range plain.Steps {
		b := ""
		if i < len(fenced.Steps) {
			b = fenced.Steps[i].Result
		}
		row(fmt.Sprintf("%2d. %s", i+1, plain.Steps[i].Step), plain.Steps[i].Result, b)
	}
	fmt.Fprintf(w, "  %s\n", strings.Repeat("-", c0+c1+22))
	row("final count", fmt.Sprint(plain.Final), fmt.Sprint(fenced.Final))
	row("expected count", fmt.Sprint(plain.Expected), fmt.Sprint(fenced.Expected))
	row("fenced writes", fencedList(plain), fencedList(fenced))
	row("outcome", outcome(plain), outcome(fenced))
	fmt.Fprintf(w, "\n  What sqlfence sent for the handler's write (the epoch is $3):\n    %s\n", rep.FencedStatement)
	fmt.Fprintln(w, "\n  The queue refused A's late completion in the plain run as well: the job record was")
	fmt.Fprintln(w, "  consistent all along. Only the fence on the inventory row kept A's stale count out.")
	if rep.Prevented {
		fmt.Fprintf(w, "\nsqlfence prevented the lost update. (%.1fs)\n", float64(rep.DurationMillis)/1000)
	} else {
		fmt.Fprintf(w, "\nThe demo did not go as expected: see the table above. (%.1fs)\n", float64(rep.DurationMillis)/1000)
	}
}

func fencedList(r demoRun) string {
	if len(r.FencedWrites) == 0 {
		return "none"
	}
	var out []string
	for _, f := range r.FencedWrites {
		out = append(out, fmt.Sprintf("%s's (epoch %d)", f.Worker, f.Epoch))
	}
	return strings.Join(out, ", ")
}

func outcome(r demoRun) string {
	if r.LostUpdate {
		return fmt.Sprintf("LOST UPDATE (%+d widgets)", r.Final-r.Expected)
	}
	return "correct"
}

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
	cmd := exec.CommandContext(ctx, exe, workerCommand, "--driver", driver, "--policy", policy, "--lease", lease.String())
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
