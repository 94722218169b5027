// pgx's CopyFrom, judged as the pgx front decides it: as the INSERT the copy amounts to.

package analyzer

import (
	"go/ast"

	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// copyFromDiagnostics judges CopyFrom(ctx, table, columns, src). The pgx front
// decides a copy as INSERT INTO table (columns) VALUES ($1, …) (front.CopyInsert):
// into an unprotected table it passes, into one protected table it is fenced (every
// row gets the epoch), and what the INSERT would be refused for (the epoch column
// among the columns, a claim table's columns) the copy is refused for, as is a copy
// into a relation over several protected tables. A table or column list that is not
// a list of constants cannot be decided here: into a protected table that is SF805.
func copyFromDiagnostics(r *rules, ev *evaluator, call *ast.CallExpr, site callSite) []analysis.Diagnostic {
	table, ok := constList(ev, call.Args[site.arg])
	if !ok || len(table) == 0 || len(table) > 2 {
		return nil // not a name the policy can match: nothing to say
	}
	var columns []string
	if site.arg+1 < len(call.Args) {
		columns, ok = constList(ev, call.Args[site.arg+1])
	}
	insert := front.CopyInsert(table, columns)
	if !ok || len(columns) == 0 {
		schema, name := "", table[len(table)-1]
		if len(table) == 2 {
			schema = table[0]
		}
		t, _ := r.pol.Match(schema, name)
		if t == nil || ok { // no columns: pgx reports the error itself
			return nil
		}
		return []analysis.Diagnostic{dynamicWrite(call, site, t.QualifiedName.String())}
	}
	if err := decide(r, insert); err != nil {
		return []analysis.Diagnostic{refusalDiagnostic(call, site, err)}
	}
	if plan := r.plan(insert); len(plan.Tables) > 1 {
		return []analysis.Diagnostic{refusalDiagnostic(call, site, &sqlfence.Error{Kind: sqlfence.ErrRefused,
			Code: rulecode.CopyFrom, Table: plan.Tables[0], Statement: insert, Reason: front.CopyManyReason, Fix: front.CopyManyFix})}
	}
	return nil
}

// constList is the strings of a composite literal of constants (pgx.Identifier{…},
// []string{…}); ok is false when any element is not known.
func constList(ev *evaluator, arg ast.Expr) ([]string, bool) {
	lit, ok := ast.Unparen(arg).(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	parts := make([]string, 0, len(lit.Elts))
	for _, e := range lit.Elts {
		s, ok := ev.eval(e, nil, 0).known()
		if !ok {
			return nil, false
		}
		parts = append(parts, s)
	}
	return parts, true
}
