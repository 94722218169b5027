// Policy.Plan: the analysis for tools that check SQL without a database.

package sqlfence

import (
	"context"
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

// Plan decides what sqlfence would do with query, without a database: from the
// statement's text and the policy's names alone, as a connector under resolve: none
// does. [Policy.Planner] decides with a database's catalog.
func (p *Policy) Plan(query string) Plan {
	c, err := p.compile()
	if err != nil {
		return Plan{Err: err}
	}
	return plan(c, query)
}

// Planner decides statements as a connector to one database does: with the policy
// resolved against that database's catalog when the policy says resolve: catalog
// (the default), so partitions, children and views of protected tables, user
// functions' bodies, triggers, rules and foreign-key actions count as they do for
// the driver. The catalog is read once, when the Planner is made.
type Planner struct{ c *engine.Policy }

// Planner reads the catalog through query as a connector does before its first
// statement (query runs one query with positional arguments and returns every row:
// int8 as int64, text as string, bool as bool). A policy that does not match the
// database (a missing table, an epoch column that is not bigint NOT NULL, an
// ambiguous name) is an *Error matching ErrRefused, with the connector's code
// (SF520–SF523), as the connector refuses every statement then. Under resolve: none
// no catalog is read and the Planner decides as Plan does.
func (p *Policy) Planner(ctx context.Context, query func(ctx context.Context, sql string, args ...any) ([][]any, error)) (*Planner, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	if !c.ResolveCatalog {
		return &Planner{c: c}, nil
	}
	r, err := engine.Resolve(ctx, query, c)
	if err != nil {
		return nil, catalogError(err)
	}
	return &Planner{c: r}, nil
}

// Plan decides what sqlfence would do with query on the Planner's database.
func (pl *Planner) Plan(query string) Plan { return plan(pl.c, query) }

func plan(c *engine.Policy, query string) Plan {
	var out Plan
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
