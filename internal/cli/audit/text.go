package audit

import (
	"fmt"
	"io"
	"strings"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

func writeText(w io.Writer, rep *auditReport, fix bool) {
	c := rep.Counter
	from := c.Value
	if rep.Fix != nil {
		from = rep.Fix.From
	}
	switch c.Kind {
	case "sequence":
		fmt.Fprintf(w, "claim counter: sequence %s, highest epoch handed out %d\n", c.Name, from)
	default:
		fmt.Fprintf(w, "claim counter: %s.%s (per-job epochs), highest epoch of any job %d\n", c.Name, sqlident.Quote(c.Column), from)
	}
	fmt.Fprintf(w, "\n%-32s %12s %12s %14s %12s\n", "TABLE", "ROWS", "ABOVE", "HIGHEST EPOCH", "NULL EPOCH")
	for _, t := range rep.Tables {
		highest := "-"
		if t.Highest != nil {
			highest = fmt.Sprint(*t.Highest)
		}
		fmt.Fprintf(w, "%-32s %12d %12d %14s %12d\n", t.Table, t.Scanned, t.Above, highest, t.NullEpochs)
		if len(t.Examples) > 0 {
			var ex []string
			for _, e := range t.Examples {
				ex = append(ex, fmt.Sprintf("%s (epoch %d)", e.Key, e.Epoch))
			}
			more := ""
			if int64(len(t.Examples)) < t.Above {
				more = ", …"
			}
			fmt.Fprintf(w, "    %s%s\n", strings.Join(ex, "; "), more)
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
	if c.Kind == "jobs_table" {
		fmt.Fprintf(w, "Per-job epochs: rows are compared with the highest epoch of any job, so a row above its own job's epoch but not above %d is not found.\n", from)
	}
	switch f := rep.Fix; {
	case f != nil && f.Note != "":
		fmt.Fprintf(w, "Fixed nothing: %s.\n", f.Note)
	case f != nil && c.Kind == "sequence":
		fmt.Fprintf(w, "Fixed, in one transaction: sequence %s moved from %d to %d; the next claim gets %d. No row was changed.\n", c.Name, f.From, f.To, f.To+1)
	case f != nil:
		fmt.Fprintf(w, "Fixed, in one transaction: raised %s.%s to %d on %d %s; every job's next claim gets at least %d. No protected row was changed.\n",
			c.Name, sqlident.Quote(c.Column), f.To, f.JobsRaised, cmdutil.Plural(int(f.JobsRaised), "job", "jobs"), f.To+1)
		fmt.Fprintln(w, "A job that was claimed while this ran has lost its claim: its renewal and completion are refused, and it runs again once its lease expires.")
	case rep.RowsAbove > 0 && !fix:
		next := "the next claim then gets"
		if c.Kind == "jobs_table" {
			next = "every job's next claim then gets at least"
		}
		fmt.Fprintf(w, "Run with --fix to move the counter to %d; %s %d.\n", rep.Highest, next, rep.Highest+1)
	}
	if rep.NullEpochs > 0 {
		fmt.Fprintf(w, "%d %s a NULL epoch, which no fenced write ever matches (NULL < $e is never true): set it to 0 under the guard's override and make the column NOT NULL DEFAULT 0.\n",
			rep.NullEpochs, cmdutil.Plural(int(rep.NullEpochs), "row has", "rows have"))
	}
}
