// Package audit is `sqlfence audit`: it finds rows of the protected tables whose
// epoch is above the claim counter (or NULL), and with --fix moves the counter past
// them.
package audit

import (
	"context"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

const usage = `Usage: sqlfence audit --policy sqlfence.yaml --dsn DSN [--sequence NAME | --jobs-table NAME [--epoch-column COL]] [--fix]

Finds rows of the protected tables whose stored epoch is above the claim counter — a
restored backup, a test, a manual fix. Such a row fences every write until the
counter passes its epoch: no claim has been handed that epoch yet, so every worker is
"superseded" on it. Rows with a NULL epoch are reported too: no fenced write ever
matches them.

The claim counter is either
  --sequence NAME      a sequence every claim draws its epoch from (the claim
                       package's GlobalEpoch; the default is sqlfence_epoch), or
  --jobs-table NAME    a jobs table whose per-job counter is --epoch-column
                       (default lease_epoch); rows are compared with the highest
                       epoch of any job.

--fix moves the counter past the highest stored epoch, in one transaction that holds
off concurrent claims, and prints what it changed; it never lowers a counter and never
touches a protected row (lowering a row's epoch would let a superseded worker write it
again). For a sequence it is setval; for a jobs table it raises every job's epoch below
the highest stored epoch to it — safe, since epochs only grow, but a job claimed at that
moment loses its claim (its renewal and completion are refused) and runs again once its
lease expires, so prefer running it while the workers are stopped.

Large tables are read in batches of --batch-pages pages in one snapshot, with progress
on stderr.

Exit status: 0 nothing found (or everything fixed), 1 rows above the counter (without
--fix) or rows with a NULL epoch, 2 usage, policy or database error.

Flags:
`

// Run is sqlfence audit: it compares the protected tables' epochs with the claim
// counter and, with --fix, moves the counter past them.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("audit", usage)
	policyPath := f.String("policy", "", "policy file (default $SQLFENCE_POLICY)")
	dsn := f.String("dsn", "", "the database to audit")
	sequence := f.String("sequence", "", "the sequence claims draw epochs from (default sqlfence_epoch, unless --jobs-table)")
	jobsTable := f.String("jobs-table", "", "a jobs table with a per-job epoch counter, instead of --sequence")
	epochColumn := f.String("epoch-column", "lease_epoch", "the jobs table's epoch column, with --jobs-table")
	fix := f.Bool("fix", false, "move the counter past the highest stored epoch")
	asJSON := f.Bool("json", false, "print the report as JSON")
	examples := f.Int("examples", 5, "rows to show per table (by key)")
	batchPages := f.Int("batch-pages", 16384, "pages read per batch on large tables (progress is shown per batch)")
	quiet := f.Bool("quiet", false, "no progress on stderr")
	connectTimeout := f.Duration("connect-timeout", cmdutil.DefaultConnectTimeout, "how long to wait for the database to answer")
	lockTimeout := f.Duration("lock-timeout", 10*time.Second, "with --fix: how long to wait to hold off claims")
	pos, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(pos) > 0:
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	case *sequence != "" && *jobsTable != "":
		return f.UsageError(stderr, "give --sequence or --jobs-table, not both")
	case *dsn == "":
		return f.UsageError(stderr, "no database: give --dsn postgres://user@host:5432/dbname")
	case *examples < 0 || *batchPages < 1:
		return f.UsageError(stderr, "--examples must be >= 0 and --batch-pages >= 1")
	case *lockTimeout <= 0:
		return f.UsageError(stderr, "--lock-timeout must be positive")
	}
	pol, err := cmdutil.LoadPolicy(*policyPath)
	if err != nil {
		return cmdutil.Fail(stderr, "audit", err)
	}
	ctx := context.Background()
	conn, err := cmdutil.Connect(ctx, *dsn, *connectTimeout)
	if err != nil {
		return cmdutil.Fail(stderr, "audit", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	progress := stderr
	if *quiet {
		progress = io.Discard
	}
	a := &auditor{conn: conn, progress: progress, examples: *examples, batchPages: *batchPages, lockTimeout: *lockTimeout}
	var rep auditReport
	if *jobsTable != "" {
		rep.Counter, err = a.jobsCounter(ctx, *jobsTable, *epochColumn)
	} else {
		name := *sequence
		if name == "" {
			name = "sqlfence_epoch"
		}
		rep.Counter, err = a.sequenceCounter(ctx, name, *sequence == "")
	}
	if err != nil {
		return cmdutil.Fail(stderr, "audit", err)
	}
	rels, err := resolveTables(ctx, conn, pol)
	if err != nil {
		return cmdutil.Fail(stderr, "audit", err)
	}
	if err := a.scan(ctx, &rep, rels); err != nil {
		return cmdutil.Fail(stderr, "audit", err)
	}
	if *fix && rep.RowsAbove > 0 {
		if rep.Fix, err = a.fix(ctx, &rep.Counter, rep.Highest); err != nil {
			return cmdutil.Fail(stderr, "audit", err)
		}
	}
	if *asJSON {
		cmdutil.WriteJSON(stdout, rep)
	} else {
		writeText(stdout, &rep, *fix)
	}
	switch {
	case rep.RowsAbove > 0 && (rep.Fix == nil || !rep.Fix.Applied), rep.NullEpochs > 0:
		return cmdutil.ExitFindings
	}
	return cmdutil.ExitOK
}

type auditor struct {
	conn        *pgx.Conn
	progress    io.Writer
	examples    int
	batchPages  int
	lockTimeout time.Duration
}
