// Command chain runs chains of jobs whose every link ships an item (a fenced
// write), tells a receiver outside the database about it (an outbox message
// under the link's effect key) and enqueues the next link (a successor keyed
// by its parent) — with a worker paused past its lease in the middle of a
// link, and a receiver that fails now and then.
//
//	go run ./examples/chain                 # a throwaway PostgreSQL of its own
//	go run ./examples/chain -dsn postgres://app@localhost/app
//
// With -dsn it works in the schema chain_example, which it drops and
// recreates. The receiver listens on loopback and deduplicates by the
// Idempotency-Key header. At the end the example checks that every chain ran
// end to end exactly once, no link was enqueued twice, and every message was
// delivered at least once and applied exactly once.
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
	flag.IntVar(&cfg.Chains, "chains", 5, "chains to start")
	flag.IntVar(&cfg.Links, "links", 4, "jobs per chain")
	flag.IntVar(&cfg.Workers, "workers", 3, "concurrent workers")
	flag.DurationVar(&cfg.Lease, "lease", time.Second, "claim lease")
	flag.DurationVar(&cfg.Pause, "pause", 1500*time.Millisecond, "how long worker 0 is paused in its first link (0: no pause)")
	flag.Parse()
	cfg.Log = os.Stdout
	if err := start(context.Background(), *dsn, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chain:", err)
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
