// Policy.Plan: the analysis for tools that check SQL without a database.

package sqlfence

import (
	"slices"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// Plan is what sqlfence does with one statement under a policy, for tools that check
// SQL without running it (sqlfence check) and for tests.
type Plan struct {
	// Tables lists the protected tables the statement writes, as the policy names them.
	Tables []string
	// Fenced is the text sqlfence sends, with the fence inserted; "" when the
	// statement is sent unchanged.
	Fenced string
	// EpochParam is the parameter number that carries the epoch in Fenced.
	EpochParam int
	// Err is the *Error (matching ErrRefused) when sqlfence refuses the statement.
	Err error
	// ClaimTable names the claim table whose status or epoch column the statement
	// writes: the driver sends it only from the claim helpers, and refuses it otherwise.
	ClaimTable string
	// Check is the query the driver runs after the fenced statement affected no rows
	// (and, under WithExactAccounting, after it affected some), to tell a fence from an
	// ordinary result; "" when there is none. It returns one row of two bigint columns:
	// the highest epoch stored on the rows the statement matches (NULL when none
	// matches) and how many of them the fence kept. For tests that stand in for the
	// database (a mock must answer it); sqlfence runs it itself.
	Check string
	// CheckArgs lists, for the check's parameters $1…$n-1 in order, the 0-based index
	// of the statement's argument each one takes; the check's last parameter, $n, is
	// the epoch.
	CheckArgs []int
}

// Plan decides what sqlfence would do with query, without a database.
func (p *Policy) Plan(query string) Plan {
	var out Plan
	c, err := p.compile()
	if err != nil {
		out.Err = err
		return out
	}
	d := engine.Analyze(c, query)
	if d.Act() == engine.ActRefuse {
		out.Err = publicError(d.Refusal().ForStatement(query, 0))
		if t := d.Refusal().Table; t != "" {
			out.Tables = []string{t}
		}
		return out
	}
	for _, t := range d.Tables() {
		if n := t.QualifiedName.String(); !slices.Contains(out.Tables, n) {
			out.Tables = append(out.Tables, n)
		}
	}
	if d.Act() == engine.ActRewrite {
		out.Fenced, out.EpochParam = d.SQL(), d.EpochParam()
		if cl := d.Classifier(); cl != nil {
			out.Check, out.CheckArgs = cl.Query()
		}
	}
	if ct := d.ClaimTable(); ct != nil {
		out.ClaimTable = ct.QualifiedName.String()
	}
	return out
}
