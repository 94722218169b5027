//go:build unix

package outbox_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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
	"github.com/sqlfence/sqlfence/outbox"
)

// TestChainChaos runs chains of jobs — each link ships (a fenced write), adds
// an outbox message for a receiver on loopback that deduplicates by
// Idempotency-Key, and enqueues the next link — in worker processes, with
// relay processes delivering, while a seeded schedule pauses workers past
// their lease between a link's two transactions (SIGSTOP, SIGCONT), kills
// workers and relays (SIGKILL), terminates their connections and restarts the
// server. With effect keys every chain runs end to end once: one job and one
// shipment per link, every message delivered at least once and applied once.
// The same run without keys (a key per execution) shows duplicates.
//
// The default run is short. The long one:
//
//	SQLFENCE_CHAIN_EVENTS=80 go test -run '^TestChainChaos$' -v -timeout 30m ./outbox
//
// SQLFENCE_CHAIN_SEED replays a schedule (the test logs the seed it used).
func TestChainChaos(t *testing.T) {
	if role := os.Getenv(chainRoleEnv); role != "" {
		os.Exit(chainProcess(role))
	}
	events := 8
	if n, err := strconv.Atoi(os.Getenv("SQLFENCE_CHAIN_EVENTS")); err == nil && n > 0 {
		events = n
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("SQLFENCE_CHAIN_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (SQLFENCE_CHAIN_SEED=%d replays the schedule), %d events per mode", seed, seed, events)
	admin, restart := chainServer(t)
	for i, mode := range []string{"nokeys", "keys"} {
		t.Run(mode, func(t *testing.T) {
			r := runChain(t, admin, restart, mode, events, seed+uint64(i))
			t.Logf("%s: %d chains, %d jobs (%d links twice, %d missing, %d not done); %d shipments twice, %d missing, stock off by %d; "+
				"%d messages undelivered; receiver: %d requests, %d links applied twice, %d never; %d pauses (%d in the window), %d kills, %d relay kills, %d terminations, %d restarts; %v",
				mode, r.chains, r.jobs, r.dupJobs, r.missingJobs, r.notDone, r.dupShipments, r.missingShipments, r.drift,
				r.undelivered, r.requests, r.dupApplied, r.missingApplied, r.pauses, r.targeted, r.kills, r.relayKills, r.terminations, r.restarts, r.wall.Round(100*time.Millisecond))
			dups := r.dupJobs + r.dupShipments + r.dupApplied
			if mode == "nokeys" {
				if dups == 0 {
					t.Errorf("without keys: nothing applied twice after %d pauses in the window; the schedule no longer exercises the hazard", r.targeted)
				}
				return
			}
			if dups+r.missingJobs+r.notDone+r.missingShipments+r.drift+r.undelivered+r.missingApplied != 0 {
				t.Errorf("with keys: a chain did not run end to end exactly once, or a message was not applied exactly once (see above)")
			}
			if r.targeted == 0 {
				t.Errorf("with keys: no pause in the window; the schedule did not exercise the hazard")
			}
		})
	}
}

// chainServer gives the test a server it may restart: a cluster of its own.
// With SQLFENCE_TEST_DSN it uses that server and does not restart it.
func chainServer(t *testing.T) (admin string, restart func(context.Context) error) {
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

type chainResult struct {
	chains, jobs, dupJobs, missingJobs, notDone                 int
	dupShipments, missingShipments, drift, undelivered          int
	requests, dupApplied, missingApplied                        int
	pauses, targeted, kills, relayKills, terminations, restarts int
	wall                                                        time.Duration
}

type chainProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

type chainRun struct {
	t    *testing.T
	dsn  string
	mode string
	url  string
	db   *sql.DB

	mu      sync.Mutex
	procs   map[string]*chainProc
	paused  map[string]bool
	next    int
	res     chainResult
	applied map[string]map[string]bool // payload (chain/link) → keys applied
}

func runChain(t *testing.T, admin string, restart func(context.Context) error, mode string, events int, seed uint64) chainResult {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute) // every statement under a deadline
	defer cancel()
	dsn, drop, err := pgtest.CreateDatabase(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(context.Background()) })
	r := &chainRun{t: t, dsn: dsn, mode: mode, procs: map[string]*chainProc{}, paused: map[string]bool{}, applied: map[string]map[string]bool{}}
	if r.db, err = sql.Open("pgx", dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	jobs, _ := claim.NewJobs(claim.JobsConfig{})
	steps, _ := claim.NewSteps("")
	box, _ := outbox.New("")
	for _, s := range []string{
		jobs.Schema(), steps.Schema(), box.Schema(),
		`ALTER TABLE jobs ADD COLUMN chain int NOT NULL, ADD COLUMN link int NOT NULL`,
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, initial int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		// No unique key on (chain, link): a link shipped twice must show, not fail.
		`CREATE TABLE shipments (chain int NOT NULL, link int NOT NULL, epoch bigint NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
	} {
		if _, err := r.db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// The receiver deduplicates by key, as a payment API does, and records
	// every request.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		key := req.Header.Get(outbox.KeyHeader)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.res.requests++
		if r.applied[string(body)] == nil {
			r.applied[string(body)] = map[string]bool{}
		}
		r.applied[string(body)][key] = true
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	t.Cleanup(r.stopAll)

	r.enqueue(ctx, 6)
	start := time.Now()
	for range 3 {
		r.spawn("worker")
	}
	for range 2 {
		r.spawn("relay")
	}
	r.schedule(ctx, rand.New(rand.NewPCG(seed, 0xc4a1)), events, restart)
	r.waitFor(ctx, "every job done", `SELECT count(*) FROM jobs WHERE status <> 'done'`)
	r.waitFor(ctx, "every message delivered", `SELECT count(*) FROM sqlfence_outbox WHERE delivered_at IS NULL`)
	r.res.wall = time.Since(start)
	r.stopAll()
	r.check(ctx)
	return r.res
}

func (r *chainRun) spawn(role string) {
	r.mu.Lock()
	r.next++
	name := fmt.Sprintf("chain-%s%d", role[:1], r.next)
	r.mu.Unlock()
	pr, pw, err := os.Pipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChainChaos$")
	cmd.Env = append(os.Environ(), chainRoleEnv+"="+role, chainModeEnv+"="+r.mode, chainURLEnv+"="+r.url,
		chainDSNEnv+"="+withParam(r.dsn, "application_name", name))
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	pw.Close()
	p := &chainProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() { // drained; the data alone is judged
		}
		pr.Close()
		cmd.Wait()
		close(p.exited)
	}()
	r.mu.Lock()
	r.procs[name] = p
	r.mu.Unlock()
}

// enqueue starts n new chains, each with its own stock row.
func (r *chainRun) enqueue(ctx context.Context, n int) {
	r.mu.Lock()
	first := r.res.chains + 1
	r.res.chains += n
	r.mu.Unlock()
	r.retry(ctx, func() error {
		_, err := r.db.ExecContext(ctx, `WITH c AS (SELECT generate_series($1::int, $1::int + $2 - 1) AS c),
			s AS (INSERT INTO inventory (sku, quantity, initial) SELECT 'c' || c, 1000, 1000 FROM c)
			INSERT INTO jobs (chain, link) SELECT c, 1 FROM c`, first, n)
		return err
	})
}

// schedule runs the seeded events, one every 0.3 to 0.7 s, starting new
// chains whenever few jobs are left, so that the events meet busy workers.
func (r *chainRun) schedule(ctx context.Context, rng *rand.Rand, events int, restart func(context.Context) error) {
	cycle := []string{"pause", "kill", "pause", "relay", "pause", "terminate", "pause", "restart"}
	kinds := make([]string, events)
	for i := range kinds {
		kinds[i] = cycle[i%len(cycle)]
	}
	rng.Shuffle(len(kinds)-1, func(i, j int) { kinds[i+1], kinds[j+1] = kinds[j+1], kinds[i+1] }) // a pause first
	var paused sync.WaitGroup
	defer paused.Wait()
	for _, kind := range kinds {
		time.Sleep(time.Duration(300+rng.IntN(400)) * time.Millisecond)
		var left int
		if r.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE status <> 'done'`).Scan(&left) == nil && left < 6 {
			r.enqueue(ctx, 6)
		}
		switch kind {
		case "pause":
			// At most two of the three workers are paused at once: one takes over.
			for r.pausedCount() >= 2 {
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
				time.Sleep(chainLease * 5 / 2) // well past the lease: a successor takes over
				p.cmd.Process.Signal(syscall.SIGCONT)
				r.mu.Lock()
				delete(r.paused, name)
				r.mu.Unlock()
			}()
			r.t.Logf("paused %s (in the window: %v)", name, targeted)
		case "kill", "relay":
			role := map[string]string{"kill": "worker", "relay": "relay"}[kind]
			name, p := r.pick(rng, role)
			p.cmd.Process.Kill()
			<-p.exited
			r.mu.Lock()
			delete(r.procs, name)
			if role == "relay" {
				r.res.relayKills++
			} else {
				r.res.kills++
			}
			r.mu.Unlock()
			r.spawn(role)
		case "terminate":
			name, _ := r.pick(rng, "")
			r.retry(ctx, func() error {
				_, err := r.db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, name)
				return err
			})
			r.mu.Lock()
			r.res.terminations++
			r.mu.Unlock()
		case "restart":
			if restart == nil {
				continue
			}
			paused.Wait() // a restart would end a paused worker's session
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

// pauseStop stops a worker in the window between a link's two transactions,
// checked again once it is stopped; it falls back to any worker.
func (r *chainRun) pauseStop(ctx context.Context, rng *rand.Rand) (string, *chainProc, bool) {
	const inWindow = `SELECT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE $1 AND state = 'idle' AND query = 'SELECT ''chain-window'''`
	for range 300 {
		var names []string
		if rows, err := r.db.QueryContext(ctx, inWindow, "chain-w%"); err == nil {
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
		names = slices.DeleteFunc(names, func(n string) bool { return r.procs[n] == nil || r.paused[n] })
		r.mu.Unlock()
		if len(names) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		n := names[rng.IntN(len(names))]
		r.mu.Lock()
		p := r.procs[n]
		r.mu.Unlock()
		p.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(10 * time.Millisecond)
		var still string
		if r.db.QueryRowContext(ctx, inWindow, n).Scan(&still) == nil {
			return n, p, true
		}
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	n, p := r.pick(rng, "worker")
	p.cmd.Process.Signal(syscall.SIGSTOP)
	return n, p, false
}

func (r *chainRun) pausedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.paused)
}

// pick chooses a process of role ("" for any) that is not paused, waiting
// for a pause to end if every one is.
func (r *chainRun) pick(rng *rand.Rand, role string) (string, *chainProc) {
	for {
		r.mu.Lock()
		var names []string
		for n := range r.procs {
			if !r.paused[n] && (role == "" || strings.HasPrefix(n, "chain-"+role[:1])) {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			n := names[rng.IntN(len(names))]
			p := r.procs[n]
			r.mu.Unlock()
			return n, p
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *chainRun) retry(ctx context.Context, f func() error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.t.Fatalf("chain chaos test query: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor waits until count query q gives 0.
func (r *chainRun) waitFor(ctx context.Context, what, q string) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var n int
		r.retry(ctx, func() error { return r.db.QueryRowContext(ctx, q).Scan(&n) })
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("not %s after 3 minutes: %d left", what, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *chainRun) stopAll() {
	r.mu.Lock()
	procs := make([]*chainProc, 0, len(r.procs))
	for _, p := range r.procs {
		procs = append(procs, p)
	}
	r.procs = map[string]*chainProc{}
	r.mu.Unlock()
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// check reads the outcome from the data and the receiver alone.
func (r *chainRun) check(ctx context.Context) {
	res := &r.res
	r.retry(ctx, func() error {
		return r.db.QueryRowContext(ctx, `
WITH links AS (SELECT c, l FROM generate_series(1, $1::int) c, generate_series(1, $2::int) l),
j AS (SELECT chain, link, count(*) AS n FROM jobs GROUP BY 1, 2),
s AS (SELECT chain, link, count(*) AS n FROM shipments GROUP BY 1, 2)
SELECT (SELECT count(*) FROM jobs),
	(SELECT coalesce(sum(n - 1), 0) FROM j),
	(SELECT count(*) FROM links LEFT JOIN j ON j.chain = c AND j.link = l WHERE j.n IS NULL),
	(SELECT count(*) FROM jobs WHERE status <> 'done'),
	(SELECT coalesce(sum(n - 1), 0) FROM s),
	(SELECT count(*) FROM links LEFT JOIN s ON s.chain = c AND s.link = l WHERE s.n IS NULL),
	(SELECT coalesce(sum(abs(i.quantity - (i.initial - coalesce((SELECT sum(n) FROM s WHERE 'c' || s.chain = i.sku), 0)))), 0) FROM inventory i),
	(SELECT count(*) FROM sqlfence_outbox WHERE delivered_at IS NULL)`, res.chains, chainLinks).Scan(
			&res.jobs, &res.dupJobs, &res.missingJobs, &res.notDone, &res.dupShipments, &res.missingShipments, &res.drift, &res.undelivered)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := 1; c <= res.chains; c++ {
		for l := 1; l <= chainLinks; l++ {
			switch n := len(r.applied[fmt.Sprintf("%d/%d", c, l)]); {
			case n == 0:
				res.missingApplied++
			case n > 1:
				res.dupApplied += n - 1
			}
		}
	}
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
