//go:build unix

package claim_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/pgcluster"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// TestChaos runs a stock-moving workload in worker processes while a seeded
// schedule pauses them past their lease (SIGSTOP, then SIGCONT), kills and
// replaces them (SIGKILL), terminates their connections (pg_terminate_backend)
// and restarts the server. On the plain driver, superseded workers apply their
// jobs twice; through sqlfence (stale: claim and stale: row) every job is applied
// exactly once and finishes.
//
// The default run is short enough for every go test. The long run:
//
//	SQLFENCE_CHAOS_EVENTS=120 go test -run '^TestChaos$' -v -timeout 30m ./claim
//
// SQLFENCE_CHAOS_SEED replays a schedule (the test logs the seed it used).
func TestChaos(t *testing.T) {
	if name := os.Getenv(chaosWorkerEnv); name != "" {
		os.Exit(chaosWorker(name))
	}
	events := chaosEvents
	if n, err := strconv.Atoi(os.Getenv("SQLFENCE_CHAOS_EVENTS")); err == nil && n > 0 {
		events = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SQLFENCE_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (SQLFENCE_CHAOS_SEED=%d replays the schedule), %d events per mode", seed, seed, events)
	admin, restart := chaosServer(t)
	for i, mode := range []string{"plain", "claim", "row"} {
		t.Run(mode, func(t *testing.T) {
			r := runChaos(t, admin, restart, mode, events, seed+uint64(i))
			t.Logf("%s: %d jobs, %d done, %.2f claims/job, %d fenced, %d errors; %d pauses (%d in the read-compute window), %d kills, %d terminations, %d restarts; %d steps applied twice, %d lost, stock off the record by %d, total stock off by %d; %v",
				mode, r.jobs, r.done, float64(r.claims)/float64(r.jobs), r.fenced, r.errors, r.pauses, r.targeted, r.kills, r.terminations, r.restarts, r.double, r.lost, r.drift, r.conservedBy, r.wall.Round(100*time.Millisecond))
			if mode == "plain" {
				// The teeth: the same workload and schedule without fencing
				// loses its invariant.
				if r.double+r.lost+r.drift == 0 {
					t.Errorf("plain driver: no job applied twice or lost after %d pauses in the read-compute window; the schedule no longer exercises the hazard", r.targeted)
				}
				return
			}
			if r.fenced == 0 {
				t.Errorf("stale: %s: no write was fenced after %d pauses in the read-compute window; the schedule no longer exercises the fence", mode, r.targeted)
			}
			if r.double != 0 || r.lost != 0 || r.drift != 0 || r.conservedBy != 0 || r.done != r.jobs {
				t.Errorf("stale: %s: %d of %d jobs done, %d steps applied twice, %d lost, stock off the record by %d, total stock off by %d", mode, r.done, r.jobs, r.double, r.lost, r.drift, r.conservedBy)
			}
		})
	}
}

// chaosServer gives the test a server it may restart: a cluster of its own. With
// SQLFENCE_TEST_DSN the test uses that server and does not restart it.
func chaosServer(t *testing.T) (admin string, restart func(context.Context) error) {
	if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
		t.Logf("%s is set: using that server, without restarts", pgtest.EnvDSN)
		return dsn, nil
	}
	c, err := pgcluster.Start(t.Context())
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); errors.Is(err, pgcluster.ErrNoServer) && !ci {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c.DSN(), c.Restart
}

type chaosResult struct {
	jobs, claims, done, fenced, errors    int
	pauses, targeted, kills, terminations int
	restarts                              int
	double, lost, drift, conservedBy      int
	wall                                  time.Duration
}

// chaosRun is one mode's run: its database, its workers, its counts.
type chaosRun struct {
	t    *testing.T
	dsn  string
	mode string
	db   *sql.DB // the test's own connection: schedule queries and the checks

	mu       sync.Mutex
	workers  map[string]*chaosProc
	paused   map[string]bool // kills and terminations spare these: each pause plays out
	next     int
	enqueued int // written by feed only, while the schedule runs
	res      chaosResult
}

type chaosProc struct {
	cmd    *exec.Cmd
	out    []string // the last lines it printed, for a failure's message
	exited chan struct{}
}

const chaosHot = 4 // hot rows: every job moves stock between two of them

func runChaos(t *testing.T, admin string, restart func(context.Context) error, mode string, events int, seed uint64) chaosResult {
	ctx := t.Context()
	dsn, drop, err := pgtest.CreateDatabase(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(context.Background()) })
	j, err := claim.NewJobs(claim.JobsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := &chaosRun{t: t, dsn: dsn, mode: mode, workers: map[string]*chaosProc{}, paused: map[string]bool{}}
	if r.db, err = sql.Open("pgx", withParam(dsn, "application_name", "chaos-test")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{j.Schema(), nil},
		{`ALTER TABLE jobs ADD COLUMN src text NOT NULL, ADD COLUMN dst text NOT NULL, ADD COLUMN qty int NOT NULL`, nil},
		{`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, initial int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`, nil},
		// No unique key on (job_id, step): a job applied twice must show, not fail.
		{`CREATE TABLE transfers (job_id bigint NOT NULL, step int NOT NULL, epoch bigint NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`, nil},
		{`INSERT INTO inventory (sku, quantity, initial) SELECT 'h' || g, 100000, 100000 FROM generate_series(0, $1::int - 1) g`, []any{chaosHot}},
	} {
		if _, err := r.db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	t.Cleanup(r.stopAll)

	if err := r.enqueue(ctx, chaosBatch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range chaosWorkers {
		r.spawn()
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	r.schedule(ctx, rng, events, restart)
	r.waitDone(ctx)
	r.res.wall = time.Since(start)
	r.stopAll()
	r.check(ctx)
	return r.res
}

// spawn starts a worker process: this test binary, in worker mode.
func (r *chaosRun) spawn() {
	r.mu.Lock()
	r.next++
	name := fmt.Sprintf("chaos-w%d", r.next)
	r.mu.Unlock()
	pr, pw, err := os.Pipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChaos$")
	cmd.Env = append(os.Environ(), chaosWorkerEnv+"="+name, chaosModeEnv+"="+r.mode,
		chaosDSNEnv+"="+withParam(r.dsn, "application_name", name))
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	pw.Close()
	p := &chaosProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			switch strings.SplitN(line, " ", 2)[0] {
			case "claim":
				r.res.claims++
			case "fenced":
				r.res.fenced++
			case "error":
				r.res.errors++
			}
			if p.out = append(p.out, line); len(p.out) > 20 {
				p.out = p.out[1:]
			}
			r.mu.Unlock()
		}
		pr.Close()
		cmd.Wait()
		close(p.exited)
	}()
	r.mu.Lock()
	r.workers[name] = p
	r.mu.Unlock()
}

// schedule runs the seeded events, one every 0.3 to 0.7 s, while feed keeps jobs
// in the queue.
func (r *chaosRun) schedule(ctx context.Context, rng *rand.Rand, events int, restart func(context.Context) error) {
	// Pauses are the hazard fencing is for; the rest make the workers' and the
	// server's failures part of the run.
	cycle := []string{"pause", "kill", "pause", "terminate", "pause", "restart", "pause", "kill", "pause", "terminate"}
	kinds := make([]string, events)
	for i := range kinds {
		kinds[i] = cycle[i%len(cycle)]
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var paused sync.WaitGroup
	defer paused.Wait() // every pause plays out: the late write is the point
	stop, fed := make(chan struct{}), make(chan struct{})
	go r.feed(ctx, stop, fed)
	defer func() { close(stop); <-fed }()
	for _, kind := range kinds {
		time.Sleep(time.Duration(300+rng.IntN(400)) * time.Millisecond)
		switch kind {
		case "pause":
			// At most half the workers are paused at once: the others take over.
			for r.pausedCount() >= max(1, chaosWorkers/2) {
				time.Sleep(50 * time.Millisecond)
			}
			name, p, targeted := r.pauseStop(ctx, rng)
			r.mu.Lock()
			r.paused[name] = true
			r.res.pauses++
			if targeted {
				r.res.targeted++
			}
			r.mu.Unlock()
			paused.Add(1)
			go func() {
				defer paused.Done()
				time.Sleep(chaosLease * 5 / 2) // well past the lease: a successor takes over
				p.cmd.Process.Signal(syscall.SIGCONT)
				r.mu.Lock()
				delete(r.paused, name)
				r.mu.Unlock()
			}()
			r.t.Logf("paused %s (in the read-compute window: %v)", name, targeted)
		case "kill":
			name, p := r.pick(rng)
			p.cmd.Process.Kill()
			<-p.exited
			r.mu.Lock()
			delete(r.workers, name)
			r.res.kills++
			r.mu.Unlock()
			r.spawn()
		case "terminate":
			name, _ := r.pick(rng)
			var n int
			r.retry(ctx, func() error {
				return r.db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n)
			})
			r.mu.Lock()
			r.res.terminations++
			r.mu.Unlock()
		case "restart":
			if restart == nil {
				continue
			}
			paused.Wait() // a restart would end a paused worker's transaction
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := restart(rctx)
			cancel()
			if err != nil {
				r.t.Fatalf("restarting the server: %v", err)
			}
			r.mu.Lock()
			r.res.restarts++
			r.mu.Unlock()
		}
	}
}

// pauseStop stops a worker in the read-compute window of step 1 (its
// transaction open after the progress read, the write to come), where a pause
// past the lease lets a successor run the step too. The window is checked again
// once the worker is stopped, since it may have moved on meanwhile. It falls back
// to stopping any worker.
func (r *chaosRun) pauseStop(ctx context.Context, rng *rand.Rand) (string, *chaosProc, bool) {
	const inWindow = `SELECT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE $1
		AND state = 'idle in transaction' AND query LIKE 'SELECT EXISTS (SELECT FROM transfers%'`
	for range 200 { // up to a few seconds: after a restart the workers take a while to get busy again
		var names []string
		rows, err := r.db.QueryContext(ctx, inWindow, "chaos-w%")
		if err == nil {
			for rows.Next() {
				var n string
				if rows.Scan(&n) == nil {
					names = append(names, n)
				}
			}
			rows.Close()
		}
		slices.Sort(names)
		r.mu.Lock()
		names = slices.DeleteFunc(names, func(n string) bool { return r.workers[n] == nil || r.paused[n] })
		r.mu.Unlock()
		if len(names) == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		n := names[rng.IntN(len(names))]
		r.mu.Lock()
		p := r.workers[n]
		r.mu.Unlock()
		p.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(20 * time.Millisecond) // a statement sent just before the stop completes
		var still string
		if r.db.QueryRowContext(ctx, inWindow, n).Scan(&still) == nil {
			return n, p, true
		}
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	n, p := r.pick(rng)
	p.cmd.Process.Signal(syscall.SIGSTOP)
	return n, p, false
}

func (r *chaosRun) pausedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.paused)
}

// pick chooses a worker that is not paused.
func (r *chaosRun) pick(rng *rand.Rand) (string, *chaosProc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.workers))
	for n := range r.workers {
		if !r.paused[n] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	n := names[rng.IntN(len(names))]
	return n, r.workers[n]
}

// retry runs f until it succeeds: the test's own connection dies with every
// restart.
func (r *chaosRun) retry(ctx context.Context, f func() error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.t.Fatalf("chaos test query: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// enqueue adds n jobs, each moving 1 to 7 units from one hot row to another.
func (r *chaosRun) enqueue(ctx context.Context, n int) error {
	// dst is src plus 1 to hot-1: never src.
	_, err := r.db.ExecContext(ctx, `INSERT INTO jobs (src, dst, qty)
		SELECT 'h' || (g % $1), 'h' || ((g + 1 + (g / $1) % ($1 - 1)) % $1), 1 + g % 7 FROM generate_series($2::int, $2::int + $3 - 1) g`,
		chaosHot, r.enqueued+1, n)
	if err == nil {
		r.enqueued += n
	}
	return err
}

// feed keeps a batch of jobs in the queue until stop is closed, so that the
// events meet busy workers whatever the machine's speed.
func (r *chaosRun) feed(ctx context.Context, stop <-chan struct{}, fed chan<- struct{}) {
	defer close(fed)
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		var n int
		// Errors (a restart) are retried at the next tick.
		if r.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE status <> 'done'`).Scan(&n) == nil && n < chaosBatch {
			r.enqueue(ctx, chaosBatch)
		}
	}
}

func (r *chaosRun) remaining(ctx context.Context) int {
	var n int
	r.retry(ctx, func() error {
		return r.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE status <> 'done'`).Scan(&n)
	})
	return n
}

// waitDone waits until every job is done; a job stuck for long fails the test
// with what the workers printed last.
func (r *chaosRun) waitDone(ctx context.Context) {
	deadline := time.Now().Add(3 * time.Minute)
	for r.remaining(ctx) > 0 {
		if time.Now().After(deadline) {
			r.mu.Lock()
			var b strings.Builder
			for n, p := range r.workers {
				fmt.Fprintf(&b, "\n%s:\n\t%s", n, strings.Join(p.out, "\n\t"))
			}
			r.mu.Unlock()
			r.t.Fatalf("%d of %d jobs not done after 3 minutes; the workers' last lines:%s", r.remaining(ctx), r.res.jobs, b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopAll kills the workers and waits for them.
func (r *chaosRun) stopAll() {
	r.mu.Lock()
	procs := make([]*chaosProc, 0, len(r.workers))
	for _, p := range r.workers {
		procs = append(procs, p)
	}
	r.workers = map[string]*chaosProc{}
	r.mu.Unlock()
	for _, p := range procs {
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// check reads the outcome from the data alone: each job's two steps recorded
// once each (double: extra records; lost: missing ones), and every hot row's
// stock equal to its initial stock plus the recorded steps (a difference is an
// update lost, or applied without its record).
func (r *chaosRun) check(ctx context.Context) {
	r.retry(ctx, func() error {
		return r.db.QueryRowContext(ctx, `
SELECT coalesce(sum(n - 1) FILTER (WHERE n > 1), 0), count(*) FILTER (WHERE n = 0)
FROM (SELECT count(t.job_id) AS n FROM jobs j CROSS JOIN (VALUES (1), (2)) s(step)
      LEFT JOIN transfers t ON t.job_id = j.id AND t.step = s.step GROUP BY j.id, s.step) c`).Scan(&r.res.double, &r.res.lost)
	})
	r.retry(ctx, func() error {
		return r.db.QueryRowContext(ctx, `
SELECT coalesce(sum(abs(i.quantity - i.initial - coalesce(e.d, 0))), 0), sum(i.quantity - i.initial)
FROM inventory i LEFT JOIN (
	SELECT CASE t.step WHEN 1 THEN j.src ELSE j.dst END AS sku, sum(CASE t.step WHEN 1 THEN -j.qty ELSE j.qty END) AS d
	FROM transfers t JOIN jobs j ON j.id = t.job_id GROUP BY 1) e USING (sku)`).Scan(&r.res.drift, &r.res.conservedBy)
	})
	r.retry(ctx, func() error {
		return r.db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'done') FROM jobs`).Scan(&r.res.jobs, &r.res.done)
	})
}

// withParam sets a connection parameter in a DSN of either form.
func withParam(dsn, key, value string) string {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " " + key + "='" + value + "'"
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + key + "=" + value
}
