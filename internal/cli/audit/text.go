package audit

import (
	"fmt"
	"io"
	"strings"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

func writeText(w io.Writer, rep *auditReport, fix bool) {
	c := rep.Counter
	from, raw := c.Value, c.Raw
	if rep.Fix != nil {
		from, raw = rep.Fix.From, rep.Fix.RawFrom
	}
	tl := c.Timeline
	switch c.Kind {
	case kindSequence, kindCounter:
		fmt.Fprintf(w, "claim counter: %s %s at %d on the server's timeline %d: highest epoch handed out %d (%d<<32 + %d)\n",
			counterWhat(c.Kind), c.Name, raw, tl, from, tl, raw)
	default:
		fmt.Fprintf(w, "claim counter: %s.%s (per-job epochs), highest epoch of any job %d; on the server's timeline %d every job's next claim is above %d (%d<<32)\n",
			c.Name, sqlident.Quote(c.Column), raw, tl, floorOf(tl), tl)
	}
	fmt.Fprintf(w, "\n%-32s %12s %12s %14s %12s %12s %14s\n", "TABLE", "ROWS", "ABOVE", "HIGHEST EPOCH", "NULL EPOCH", "OLD FORMAT", "LATER TIMELINE")
	for _, t := range rep.Tables {
		highest := "-" // no row holds an epoch
		if t.Highest != nil {
			highest = fmt.Sprint(*t.Highest)
		}
		fmt.Fprintf(w, "%-32s %12d %12d %14s %12d %12d %14d\n", t.Table, t.Scanned, t.Above, highest, t.NullEpochs, t.OldFormat, t.LaterTimeline)
		if len(t.Examples) > 0 {
			fmt.Fprintf(w, "    %s\n", exampleList(t.Examples, t.Above))
		}
	}
	fmt.Fprintln(w)
	if rep.RowsAbove == 0 {
		fmt.Fprintf(w, "No row holds an epoch above the counter (%d).\n", from)
	} else {
		tables := 0
		for _, t := range rep.Tables {
			if t.Above > 0 {
				tables++
			}
		}
		fmt.Fprintf(w, "%d %s in %d %s %s epochs above the counter (%d), up to %d: every write with an epoch up to %d is fenced on them.\n",
			rep.RowsAbove, cmdutil.Plural(int(rep.RowsAbove), "row", "rows"), tables, cmdutil.Plural(tables, "table", "tables"),
			cmdutil.Plural(int(rep.RowsAbove), "holds", "hold"), from, rep.Highest, rep.Highest)
	}
	if c.Kind == kindJobs {
		fmt.Fprintf(w, "Per-job epochs: rows are compared with the highest epoch of any job (or the timeline's floor, when higher), so a row above its own job's epoch but not above %d is not found.\n", from)
	}
	next := "the next claim then gets"
	if c.Kind == kindJobs {
		next = "every job's next claim then gets at least"
	}
	switch f := rep.Fix; {
	case f != nil && f.Note != "":
		fmt.Fprintf(w, "Fixed nothing: %s.\n", f.Note)
	case f != nil && c.Kind != kindJobs:
		fmt.Fprintf(w, "Fixed, in one transaction: %s %s moved from %d to %d (the highest epoch handed out from %d to %d, on timeline %d); the next claim gets %d. No row was changed.\n",
			counterWhat(c.Kind), c.Name, f.RawFrom, f.RawTo, f.From, f.To, tl, f.To+step(c))
	case f != nil:
		fmt.Fprintf(w, "Fixed, in one transaction: raised %s.%s to %d on %d %s; every job's next claim gets at least %d. No protected row was changed.\n",
			c.Name, sqlident.Quote(c.Column), f.To, f.JobsRaised, cmdutil.Plural(int(f.JobsRaised), "job", "jobs"), f.To+1)
		fmt.Fprintln(w, "A job that was claimed while this ran has lost its claim: its renewal and completion are refused, and it runs again once its lease expires.")
	case rep.RowsAbove > 0 && !fix && c.Kind != kindJobs:
		fmt.Fprintf(w, "Run with --fix to move the counter to %d (the %s to %d); %s %d.\n",
			rep.Highest, counterWhat(c.Kind), rep.Highest-floorOf(tl), next, rep.Highest+step(c))
	case rep.RowsAbove > 0 && !fix:
		if target := fixTarget(rep); target > from {
			fmt.Fprintf(w, "Run with --fix to move the counter to %d; %s %d.\n", target, next, target+1)
		}
	}
	if f := rep.Fix; f != nil && f.Applied && f.RowsLeft > 0 {
		fmt.Fprintf(w, "%d %s above the counter: %s, which --fix leaves (see below).\n",
			f.RowsLeft, cmdutil.Plural(int(f.RowsLeft), "row is still", "rows are still"), cmdutil.Plural(int(f.RowsLeft), "its epoch is", "their epochs are")+" of a later timeline")
	}
	if rep.OldFormat > 0 {
		fmt.Fprintf(w, "%d %s of the format before timelines (below 2^32 = %d), drawn before the upgrade: every claim drawn now is above %d, the floor of timeline %d, so no claim drawn from now on is fenced on them. Nothing to do.\n",
			rep.OldFormat, cmdutil.Plural(int(rep.OldFormat), "row holds an epoch", "rows hold epochs"), oldFormatEnd, floorOf(tl), tl)
	}
	writeLaterTimeline(w, rep)
	if rep.NullEpochs > 0 {
		fmt.Fprintf(w, "%d %s a NULL epoch, which no fenced write ever matches (NULL < $e is never true): set it to 0 under the guard's override and make the column NOT NULL DEFAULT 0.\n",
			rep.NullEpochs, cmdutil.Plural(int(rep.NullEpochs), "row has", "rows have"))
	}
}

// writeLaterTimeline explains the epochs of a later timeline than the server's.
func writeLaterTimeline(w io.Writer, rep *auditReport) {
	c := rep.Counter
	tl := c.Timeline
	if rep.LaterTimeline > 0 {
		tables, highest := 0, int64(0)
		for _, t := range rep.Tables {
			if t.LaterTimeline > 0 {
				tables++
				highest = max(highest, *t.Highest)
			}
		}
		fmt.Fprintf(w, "%d %s in %d %s %s of a later timeline than the server's %d (up to timeline %d): the data comes from a cluster further along its history, as after a pg_dump restored into a fresh cluster, which starts again at timeline 1.\n",
			rep.LaterTimeline, cmdutil.Plural(int(rep.LaterTimeline), "row", "rows"), tables, cmdutil.Plural(tables, "table", "tables"),
			cmdutil.Plural(int(rep.LaterTimeline), "holds an epoch", "hold epochs"), tl, pgcatalog.EpochTimeline(highest))
		if c.Kind != kindJobs {
			them := cmdutil.Plural(int(rep.LaterTimeline), "it", "them")
			if rep.Fix == nil && laterAbove(rep) > 0 {
				fmt.Fprintf(w, "--fix moves the counter past %s, as past any row above it.\n", them)
			} else {
				fmt.Fprintf(w, "The counter is past %s: its epochs read as a later timeline's too, which is fine — a promotion still puts every epoch drawn after it above every epoch drawn before.\n", them)
			}
		}
	}
	if c.Kind != kindJobs || !rep.laterPerJob() {
		return
	}
	if n := c.JobsLaterTimeline; n > 0 {
		fmt.Fprintf(w, "%d %s of %s %s of a later timeline than the server's %d: %s\n",
			n, cmdutil.Plural(int(n), "job", "jobs"), c.Name, cmdutil.Plural(int(n), "holds an epoch", "hold epochs"), tl, exampleList(c.LaterJobs, n))
	}
	col := sqlident.Quote(c.Column)
	fmt.Fprintf(w, "Per-job epochs cannot be moved past a later timeline by raising a counter. A job's next epoch is its last plus one once that is above the timeline's floor (%d): for a job whose epoch is of a later timeline, a failover on this cluster would not raise it, and the promoted standby, whose copy of the job lags by the WAL it lost, could reissue epochs the old primary already handed out for that job — until the cluster's timeline passes the job's. --fix leaves them.\n",
		floorOf(tl))
	fmt.Fprintf(w, "To fix it, stop the workers, then either switch the jobs to a sequence (GlobalEpoch) or a counter table (CounterEpoch) and run sqlfence audit --fix with --sequence or --counter, which moves that counter past them; or, under the guard's override, set every epoch of %d or more (timeline %d's floor), in %s.%s and in the protected rows, to %d, the floor of the server's timeline %d: with no worker running no stale write is let through, every job's next claim is above them, and sqlfence audit then finds what is left.\n",
		floorOf(tl+1), tl+1, c.Name, col, floorOf(tl), tl)
}

// counterWhat names a sequence or a counter table as the report does.
func counterWhat(kind string) string {
	if kind == kindCounter {
		return "counter table"
	}
	return "sequence"
}

// step is how much a claim raises a sequence or a counter table.
func step(c auditCounter) int64 {
	if c.Kind == kindSequence {
		return c.increment
	}
	return 1
}

// fixTarget is what per-job --fix would raise the jobs to: the highest epoch above
// the counter that is not of a later timeline.
func fixTarget(rep *auditReport) int64 {
	var target int64
	for _, t := range rep.Tables {
		target = max(target, t.highestOnTimeline)
	}
	return target
}

// laterAbove counts the rows above the counter whose epoch is of a later timeline.
func laterAbove(rep *auditReport) int64 {
	var n int64
	for _, t := range rep.Tables {
		n += t.laterAbove
	}
	return n
}

// exampleList spells rows or jobs with their epochs, and the timeline of an epoch of
// one; "…" when total is more than shown.
func exampleList(examples []auditExample, total int64) string {
	var ex []string
	for _, e := range examples {
		if e.Epoch >= oldFormatEnd {
			ex = append(ex, fmt.Sprintf("%s (epoch %d, timeline %d)", e.Key, e.Epoch, pgcatalog.EpochTimeline(e.Epoch)))
		} else {
			ex = append(ex, fmt.Sprintf("%s (epoch %d)", e.Key, e.Epoch))
		}
	}
	more := ""
	if int64(len(examples)) < total {
		more = ", …"
	}
	return strings.Join(ex, "; ") + more
}
