// Command gettingstarted is the README's "Getting started", whole: a jobs table
// with a payload, a protected table, a job enqueued, claimed, handled and completed
// through sqlfence, and a stalled worker whose late write is fenced.
//
//	cd examples/gettingstarted && go run .              # a throwaway PostgreSQL of its own
//	cd examples/gettingstarted && go run . -dsn postgres://app@localhost/app
//
// With -dsn, give it an empty database: it creates the tables jobs and inventory.
// The policy path is relative to the working directory, hence the cd.
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
	dsn := flag.String("dsn", "", "an empty PostgreSQL database (default: start a throwaway cluster; needs the PostgreSQL server binaries)")
	policy := flag.String("policy", "sqlfence.yaml", "the policy file, relative to the working directory")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := start(ctx, *dsn, *policy); err != nil {
		fmt.Fprintln(os.Stderr, "gettingstarted:", err)
		os.Exit(1)
	}
}

func start(ctx context.Context, dsn, policy string) error {
	if dsn == "" {
		c, err := pgcluster.Start(ctx)
		if err != nil {
			return err
		}
		defer c.Stop()
		dsn = c.DSN()
	}
	return run(ctx, os.Stdout, dsn, policy)
}
