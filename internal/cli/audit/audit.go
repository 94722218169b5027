// Package audit is `sqlfence audit`: it finds rows of the protected tables whose
// epoch is above the claim counter (or NULL), and with --fix moves the counter past
// them. Epochs are drawn on the server's write timeline (timeline<<32 plus the
// counter's value), so the counter is read on the primary, with its timeline.
package audit

import (
	"context"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

const usage = `Usage: sqlfence audit --policy sqlfence.yaml --dsn DSN [--sequence NAME | --counter NAME | --jobs-table NAME [--epoch-column COL]] [--fix]

Finds rows of the protected tables whose stored epoch is above the claim counter — a
restored backup, a test, a manual fix. Such a row fences every write until the
counter passes its epoch: no claim has been handed that epoch yet, so every worker is
"superseded" on it. Rows with a NULL epoch are reported too: no fenced write ever
matches them.

The claim counter is one of
  --sequence NAME      a sequence every claim draws its epoch from (the claim
                       package's GlobalEpoch; the default is sqlfence_epoch),
  --counter NAME       a counter table whose one row each claim increments
                       (CounterEpoch; the claim helpers name it
                       sqlfence_epoch_counter), or
  --jobs-table NAME    a jobs table whose per-job counter is --epoch-column
                       (default lease_epoch); rows are compared with the highest
                       epoch of any job.

Epochs are drawn on the server's write timeline, which a promotion raises: an epoch
is timeline<<32 plus the sequence's next value or the counter's, and a job's next
per-job epoch is above its last and above timeline<<32. So the highest epoch the
counter can have handed out is timeline<<32 + its value (a sequence drawn on an
earlier timeline gave less); per-job, the highest epoch of any job or timeline<<32,
whichever is higher. Audit runs on the primary: a standby has no write timeline.

The report counts, per table, the rows with an epoch of the format before timelines
(below 2^32, drawn before the upgrade: every claim drawn now is above them, nothing to
do) and those with an epoch of a later timeline than the server's (the data came from
a cluster further along its history, as a pg_dump restored into a fresh cluster, which
starts at timeline 1). A sequence or a counter table is moved past those like past any
row; per-job epochs cannot be: the report says what to do.

--fix moves the counter so that the next epoch drawn is above every stored epoch, in
one transaction that holds off concurrent claims, and prints what it changed; it never
lowers a counter and never touches a protected row (lowering a row's epoch would let a
superseded worker write it again). For a sequence it is setval, for a counter table an
update of its row, each to the highest stored epoch less timeline<<32; for a jobs table
it raises every job's epoch below the highest stored epoch to it — safe, since epochs
only grow, but a job claimed at that moment loses its claim (its renewal and completion
are refused) and runs again once its lease expires, so prefer running it while the
workers are stopped.

Large tables are read in batches of --batch-pages pages in one snapshot, with progress
on stderr.

Exit status: 0 nothing found (or everything fixed), 1 rows above the counter (without
--fix, or that --fix leaves), rows with a NULL epoch, or per-job epochs of a later
timeline, 2 usage, policy or database error (a standby, too).

Flags:
`

// Run is sqlfence audit: it compares the protected tables' epochs with the claim
// counter and, with --fix, moves the counter past them.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("audit", usage)
	policyPath := f.String("policy", "", "policy file (default $SQLFENCE_POLICY)")
	dsn := f.String("dsn", "", "the database to audit (its primary)")
	sequence := f.String("sequence", "", "the sequence claims draw epochs from (default sqlfence_epoch, unless --counter or --jobs-table)")
	counter := f.String("counter", "", "a counter table claims draw epochs from (CounterEpoch), instead of --sequence")
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
	counters := 0
	for _, s := range []string{*sequence, *counter, *jobsTable} {
		if s != "" {
			counters++
		}
	}
	switch {
	case len(pos) > 0:
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	case counters > 1:
		return f.UsageError(stderr, "give one of --sequence, --counter and --jobs-table, not several")
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
	tl, err := serverTimeline(ctx, conn)
	if err != nil {
		return cmdutil.Fail(stderr, "audit", err)
	}
	var rep auditReport
	switch {
	case *jobsTable != "":
		rep.Counter, err = a.jobsCounter(ctx, *jobsTable, *epochColumn, tl)
	case *counter != "":
		rep.Counter, err = a.counterTable(ctx, *counter, tl)
	default:
		name := *sequence
		if name == "" {
			name = "sqlfence_epoch"
		}
		rep.Counter, err = a.sequenceCounter(ctx, name, *sequence == "", tl)
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
		if rep.Fix, err = a.fix(ctx, &rep); err != nil {
			return cmdutil.Fail(stderr, "audit", err)
		}
	}
	if *asJSON {
		cmdutil.WriteJSON(stdout, rep)
	} else {
		writeText(stdout, &rep, *fix)
	}
	if rep.rowsLeft() > 0 || rep.NullEpochs > 0 || rep.laterPerJob() {
		return cmdutil.ExitFindings
	}
	return cmdutil.ExitOK
}

// rowsLeft counts the rows above the counter once audit is done: all of them
// without --fix, those --fix left with it.
func (rep *auditReport) rowsLeft() int64 {
	if rep.Fix == nil {
		return rep.RowsAbove
	}
	return rep.Fix.RowsLeft
}

// laterPerJob reports per-job epochs of a later timeline than the server's, in the
// rows or the jobs: a failover could reissue them.
func (rep *auditReport) laterPerJob() bool {
	return rep.Counter.Kind == kindJobs && (rep.LaterTimeline > 0 || rep.Counter.JobsLaterTimeline > 0)
}

type auditor struct {
	conn        *pgx.Conn
	progress    io.Writer
	examples    int
	batchPages  int
	lockTimeout time.Duration
}
