// Command sqlfence is the command-line companion of the sqlfence driver:
//
//	sqlfence demo     a paused worker wakes after its replacement finished: plain pgx loses an update, sqlfence fences it
//	sqlfence check    lint SQL files (and SQL in Go source) for writes that bypass or cannot carry the fence
//	sqlfence guard    triggers that make PostgreSQL reject writes to protected tables that did not come through the driver
//	sqlfence doctor   inspect a deployment: the policy, the guard, the role, replication, a pooler; each failure with its fix
//	sqlfence audit    find rows whose epoch is above the claim counter, and move the counter past them
//	sqlfence relay    deliver outbox messages over HTTP, at least once, each with its Idempotency-Key
//	sqlfence version  the versions of sqlfence, pg_query_go and the PostgreSQL parser it bundles
//
// Each subcommand lives in its own package under internal/cli; this one only picks
// the subcommand and dispatches to it.
//
// Exit status: 0 success, 1 findings (check, audit, doctor) or the demo did not show
// the fence working, 2 usage, configuration or connection errors, 3 warnings only
// (doctor).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sqlfence/sqlfence/internal/cli/audit"
	"github.com/sqlfence/sqlfence/internal/cli/check"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/cli/demo"
	"github.com/sqlfence/sqlfence/internal/cli/doctor"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/internal/cli/relay"
	"github.com/sqlfence/sqlfence/internal/cli/version"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
	hidden  bool
}

func commands() []command {
	return []command{
		{name: "demo", summary: "run the paused-worker story with plain pgx and with sqlfence, side by side", run: demo.Run},
		{name: "check", summary: "lint .sql files and SQL in .go files for writes that bypass or cannot carry the fence", run: check.Run},
		{name: "guard", summary: "generate (or apply) triggers that reject writes that did not come through the driver", run: guard.Run},
		{name: "doctor", summary: "inspect a deployment check by check (policy, guard, role, replication, pooler) and give each fix", run: doctor.Run},
		{name: "audit", summary: "find rows whose epoch is above the claim counter; --fix moves the counter past them", run: audit.Run},
		{name: "relay", summary: "deliver outbox messages over HTTP, at least once, each with its Idempotency-Key", run: relay.Run},
		{name: "version", summary: "print the versions of sqlfence, pg_query_go and its PostgreSQL parser", run: version.Run},
		// The demo re-executes this program as its workers.
		{name: demo.WorkerCommand, run: demo.RunWorker, hidden: true},
	}
}

// run is the whole program behind main, so that tests can run it as a user would.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return cmdutil.ExitError
	}
	name := args[0]
	switch name {
	case "-version", "--version":
		return version.Run(args[1:], stdout, stderr) // what every other tool answers to
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && name == "help" {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return cmdutil.ExitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sqlfence: unknown command %q\n\n", name)
	usage(stderr)
	return cmdutil.ExitError
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sqlfence: fencing tokens for PostgreSQL writes made through database/sql

Usage:
  sqlfence <command> [flags]

Commands:
`)
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
Run 'sqlfence <command> --help' for a command's flags.
Start with: sqlfence demo (in a checkout of the repository: go run ./cmd/sqlfence demo)

Exit status: 0 success; 1 findings (check, audit) or the demo did not show the
fence working; 2 usage, configuration or connection errors.
`)
}
