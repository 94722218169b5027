// Command worker is a complete sqlfence job worker: claim, renew, handle with
// sqlfence, complete — several workers draining one queue, one of them paused
// past its lease the way a GC pause or a migrated VM pauses a process.
//
//	go run ./examples/worker                 # a throwaway PostgreSQL of its own
//	go run ./examples/worker -dsn postgres://app@localhost/app
//
// With -dsn it works in the schema worker_example, which it drops and
// recreates. Every job reserves stock: it decrements inventory and records a
// reservation, both protected by sqlfence (sqlfence.yaml). At the end the
// worker checks that every job was applied exactly once, whichever worker
// finished it and whoever was fenced on the way.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sqlfence/sqlfence/internal/pgcluster"
)

func main() {
	var cfg config
	dsn := flag.String("dsn", "", "PostgreSQL DSN (default: start a throwaway cluster; needs the PostgreSQL server binaries)")
	flag.IntVar(&cfg.Workers, "workers", 4, "concurrent workers")
	flag.IntVar(&cfg.Jobs, "jobs", 40, "jobs to enqueue")
	flag.DurationVar(&cfg.Lease, "lease", time.Second, "claim lease")
	flag.DurationVar(&cfg.Pause, "pause", 1500*time.Millisecond, "how long worker 0 is paused in its first job (0: no pause)")
	flag.Parse()
	cfg.Log = os.Stdout

	if err := start(context.Background(), *dsn, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// start runs the example against dsn, or against a throwaway cluster it
// starts and stops when dsn is empty.
func start(ctx context.Context, dsn string, cfg config) error {
	if dsn == "" {
		fmt.Fprintln(cfg.Log, "starting a throwaway PostgreSQL...")
		c, err := pgcluster.Start(ctx)
		if err != nil {
			return err
		}
		defer c.Stop()
		dsn = c.DSN()
	}
	return run(ctx, dsn, cfg)
}
