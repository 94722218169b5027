package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// sqlFilePolicy is the policy .sql files are judged under. They run outside the
// driver, as migrations do, so DDL is allowed; DDL that moves the fence's ground
// (renaming a protected table, a cascading key into one) is still refused, and a
// finding.
func sqlFilePolicy(pol *sqlfence.Policy) *sqlfence.Policy {
	p := *pol
	p.AllowDDL = true
	return &p
}

// outsideDriver are the refusals that matter in a file run outside the driver even
// when the statement writes no protected table directly: they concern protected
// tables (a body or rule that writes one, a listed function, DDL that moves the fence's
// ground, a cascade, a claim table's columns). What a fenced connection refuses for
// its own sake (settings, calls and bodies it cannot see into, SQL-level PREPARE) does
// not; nor does anything else, unless the refusal names a protected table.
var outsideDriver = []string{rulecode.FenceDDL, rulecode.TruncateCascade, rulecode.ListedFunction,
	rulecode.BodyWrites, rulecode.ClaimWrite, rulecode.ClaimAndProtected}

func outsideDriverFinding(err error) bool {
	var e *sqlfence.Error
	return errors.As(err, &e) && (e.Table != "" || slices.Contains(outsideDriver, e.Code))
}

// lintStatement decides whether one statement of a SQL file is a finding. stmtText
// is the statement's text, for the driver's own verdict (Policy.Plan).
func lintStatement(pol *sqlfence.Policy, stmt *pg.Node, stmtText string) (finding, bool) {
	plan := pol.Plan(stmtText)
	writes, opaque := protectedWrites(pol, stmt)
	if len(writes) == 0 {
		if plan.Err == nil || opaque == "" && !outsideDriverFinding(plan.Err) {
			return finding{}, false
		}
		table, msg := refusal(plan.Err)
		return finding{Rule: codeOf(plan.Err, rulecode.CheckOpaque), Table: table, Message: "cannot be fenced: " + msg}, true
	}
	var problems []string
	var first *write
	for i := range writes {
		w := &writes[i]
		if p := w.handFenced(); len(p) > 0 {
			if first == nil {
				first = w
			}
			problems = append(problems, p...)
		}
	}
	if first == nil {
		if opaque == "" {
			return finding{}, false // every write is fenced by hand
		}
		msg := opaque
		if plan.Err != nil {
			_, msg = refusal(plan.Err)
		}
		return finding{Rule: codeOf(plan.Err, rulecode.CheckOpaque), Table: writes[0].table.QualifiedName.String(), Message: "cannot be fenced: " + msg}, true
	}
	w := first
	col := sqlident.Quote(w.table.EpochColumn)
	op := w.table.Mode.Operator()
	var b strings.Builder
	fmt.Fprintf(&b, "%s of protected table %s bypasses the fence: %s (%s). ", w.kind, w.table.QualifiedName, w.harm(), strings.Join(dedupe(problems), "; "))
	if plan.Err != nil {
		if _, msg := refusal(plan.Err); codeOf(plan.Err, "") != rulecode.AssignsEpoch {
			fmt.Fprintf(&b, "The driver would refuse it too (%s): %s. ", codeOf(plan.Err, ""), msg)
		}
	}
	b.WriteString("Fix: ")
	switch w.kind {
	case "DELETE":
		fmt.Fprintf(&b, "run it through the driver under an epoch, fence it by hand (WHERE … AND %s %s <epoch>), or add `-- sqlfence:ignore <reason>` before it", col, op)
	case "INSERT":
		fmt.Fprintf(&b, "run it through the driver under an epoch, give every row an epoch (name %s in the column list", col)
		if w.upsert {
			fmt.Fprintf(&b, "; DO UPDATE SET … %[1]s = excluded.%[1]s WHERE … AND %[2]s.%[1]s %[3]s excluded.%[1]s", col, sqlident.Quote(w.qual), op)
		}
		b.WriteString("), or add `-- sqlfence:ignore <reason>` before it")
	default:
		fmt.Fprintf(&b, "run it through the driver under an epoch, fence it by hand (SET … %[1]s = <epoch> WHERE … AND %[1]s %[2]s <epoch>), or add `-- sqlfence:ignore <reason>` before it", col, op)
	}
	return finding{Rule: rulecode.CheckUnfencedWrite, Table: w.table.QualifiedName.String(), Message: b.String()}, true
}

func (w *write) harm() string {
	switch w.kind {
	case "DELETE":
		return "outside the driver it deletes rows whatever epoch they hold"
	case "INSERT":
		if w.upsert {
			return "outside the driver it inserts rows without an epoch and overwrites conflicting rows whatever epoch they hold"
		}
		return "outside the driver it inserts rows that carry no epoch"
	case "MERGE":
		return "outside the driver it changes matched rows whatever epoch they hold"
	}
	return "outside the driver it overwrites rows whatever epoch they hold"
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
