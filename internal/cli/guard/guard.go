// Package guard is `sqlfence guard`: it generates, prints or applies the trigger DDL
// that makes PostgreSQL reject writes to protected tables that did not come through
// the sqlfence driver, and removes it again with --drop.
package guard

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

const usage = `Usage: sqlfence guard --policy sqlfence.yaml [--apply --dsn DSN] [--no-insert]
       sqlfence guard --drop [--apply --dsn DSN] [--keep-log]

Generates trigger DDL that makes PostgreSQL itself reject writes to the protected
tables that the sqlfence driver did not fence — from psql, migrations, maintenance
scripts, another service, and, inside the driver's own sessions, from triggers,
foreign-key actions, rules, functions and DO blocks — so the fence holds beyond
what the driver sees. Without --apply it prints the SQL (review it, or run it with
psql -f); with --apply --dsn it applies it in one transaction and prints what it
guarded, then warns about foreign keys, triggers and rules that write protected
tables from inside the database.

What the guard does, on every protected table, its partitions and inheritance
children and their parents (unqualified policy names: in every schema):
  * rejects INSERT, UPDATE, DELETE and TRUNCATE unless an operator override is
    active or the write is one a statement of the driver fenced: the session
    carries sqlfence.fenced=on (the driver sets it in its startup message) and
    the statement starts with the comment the driver puts before each statement
    it fences, naming this table. A write a trigger, a foreign-key action, a rule
    or a function makes for such a statement passes only where the driver carried
    its epoch in the comment: a row trigger compares each row with that epoch and
    stamps it, or fails the statement as fenced. No extra round trip;
  * rejects an UPDATE that moves a row's epoch backwards, whoever sends it, after
    every BEFORE trigger has run.
An operator override lasts one transaction, must give a reason, and every statement
run under it is logged in sqlfence.override_log and the server log:
    BEGIN;
    SELECT sqlfence.override('restore inventory after INC-1234');
    UPDATE inventory SET quantity = 12 WHERE sku = 'widget';
    COMMIT;
The guard stops mistakes and forgotten paths, not attackers: a session that sets
sqlfence.fenced = on and copies the driver's comment passes. It needs PostgreSQL 13
or later. Re-run it after adding partitions or tables; it is idempotent.

Exit status: 0 success, 2 usage, policy or database error.

Flags:
`

// Run is sqlfence guard: it prints the guard's install or drop SQL, or applies it
// with --apply.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("guard", usage)
	policyPath := f.String("policy", "", "policy file (default $SQLFENCE_POLICY); not needed with --drop")
	dsn := f.String("dsn", "", "database to apply to, with --apply")
	apply := f.Bool("apply", false, "apply the SQL to --dsn in one transaction instead of printing it")
	drop := f.Bool("drop", false, "remove the guard: its triggers, functions, log table and schema")
	keepLog := f.Bool("keep-log", false, "with --drop: keep sqlfence.override_log and the sqlfence schema")
	noInsert := f.Bool("no-insert", false, "leave INSERT (and COPY FROM) unguarded: only UPDATE, DELETE and TRUNCATE are rejected")
	connectTimeout := f.Duration("connect-timeout", cmdutil.DefaultConnectTimeout, "how long to wait for the database to answer")
	lockTimeout := f.Duration("lock-timeout", 10*time.Second, "how long to wait for the table locks CREATE TRIGGER takes")
	pos, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	}
	if *apply && *dsn == "" {
		return f.UsageError(stderr, "--apply needs --dsn")
	}
	if !*apply && *dsn != "" {
		return f.UsageError(stderr, "--dsn is used only with --apply; without --apply guard prints the SQL")
	}
	if *keepLog && !*drop {
		return f.UsageError(stderr, "--keep-log is used only with --drop")
	}
	if *lockTimeout <= 0 {
		return f.UsageError(stderr, "--lock-timeout must be positive")
	}
	var pol *sqlfence.Policy
	if !*drop || *policyPath != "" {
		var err error
		if pol, err = cmdutil.LoadPolicy(*policyPath); err != nil {
			return cmdutil.Fail(stderr, "guard", err)
		}
	}
	g := guardScript{policy: pol, insert: !*noInsert, keepLog: *keepLog, lockTimeout: *lockTimeout}
	if !*apply {
		if *drop {
			fmt.Fprint(stdout, g.dropSQL())
		} else {
			fmt.Fprint(stdout, g.installSQL())
		}
		return cmdutil.ExitOK
	}
	ctx := context.Background()
	conn, err := cmdutil.Connect(ctx, *dsn, *connectTimeout)
	if err != nil {
		return cmdutil.Fail(stderr, "guard", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if *drop {
		err = g.applyDrop(ctx, conn, stdout)
	} else {
		err = g.applyInstall(ctx, conn, stdout)
	}
	if err != nil {
		return cmdutil.Fail(stderr, "guard", err)
	}
	return cmdutil.ExitOK
}
