package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

func writeText(w io.Writer, rep *demoReport) {
	plain, fenced := rep.Runs[0], rep.Runs[1]
	fmt.Fprintf(w, `sqlfence demo: a paused worker wakes up after its replacement finished (%s)

  The inventory holds %d widgets. Job 1 ships %d, job 2 ships %d: %d should be left.
  Workers A and B are separate processes; the job handler reads the count, computes
  the new one, and writes it back. Leases last %v; epochs come from one sequence.

`, rep.Server, demoStartQuantity, demoJobs[0].ship, demoJobs[1].ship, rep.Expected, time.Duration(rep.LeaseMillis)*time.Millisecond)
	const c0, c1 = 37, 30
	row := func(label, a, b string) { fmt.Fprintf(w, "  %-*s %-*s %s\n", c0, label, c1, a, b) }
	row("", "plain pgx", "sqlfence")
	row("", strings.Repeat("-", 9), strings.Repeat("-", 8))
	for i := range plain.Steps {
		b := ""
		if i < len(fenced.Steps) {
			b = fenced.Steps[i].Result
		}
		row(fmt.Sprintf("%2d. %s", i+1, plain.Steps[i].Step), plain.Steps[i].Result, b)
	}
	fmt.Fprintf(w, "  %s\n", strings.Repeat("-", c0+c1+22))
	row("final count", fmt.Sprint(plain.Final), fmt.Sprint(fenced.Final))
	row("expected count", fmt.Sprint(plain.Expected), fmt.Sprint(fenced.Expected))
	row("fenced writes", fencedList(plain), fencedList(fenced))
	row("outcome", outcome(plain), outcome(fenced))
	fmt.Fprintf(w, "\n  What sqlfence sent for the handler's write (the epoch is $3):\n    %s\n", rep.FencedStatement)
	fmt.Fprintln(w, "\n  The queue refused A's late completion in the plain run as well: the job record was")
	fmt.Fprintln(w, "  consistent all along. Only the fence on the inventory row kept A's stale count out.")
	if rep.Prevented {
		fmt.Fprintf(w, "\nsqlfence prevented the lost update. (%.1fs)\n", float64(rep.DurationMillis)/1000)
	} else {
		fmt.Fprintf(w, "\nThe demo did not go as expected: see the table above. (%.1fs)\n", float64(rep.DurationMillis)/1000)
	}
}

func fencedList(r demoRun) string {
	if len(r.FencedWrites) == 0 {
		return "none"
	}
	var out []string
	for _, f := range r.FencedWrites {
		out = append(out, fmt.Sprintf("%s's (epoch %d)", f.Worker, f.Epoch))
	}
	return strings.Join(out, ", ")
}

func outcome(r demoRun) string {
	if r.LostUpdate {
		return fmt.Sprintf("LOST UPDATE (%+d widgets)", r.Final-r.Expected)
	}
	return "correct"
}
