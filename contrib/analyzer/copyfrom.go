// pgx's CopyFrom: COPY FROM into a protected table cannot carry an epoch.

package analyzer

import (
	"fmt"
	"go/ast"
	"strings"

	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// copyFromDiagnostics judges CopyFrom(ctx, pgx.Identifier{...}, ...): the driver
// refuses COPY FROM into a protected table (SF302), and the pgx front does too.
func copyFromDiagnostics(pol *sqlfence.Policy, ev *evaluator, call *ast.CallExpr, arg ast.Expr) []analysis.Diagnostic {
	lit, ok := ast.Unparen(arg).(*ast.CompositeLit)
	if !ok || len(lit.Elts) == 0 || len(lit.Elts) > 2 {
		return nil
	}
	var parts []string
	for _, e := range lit.Elts {
		s, ok := ev.eval(e, nil, 0).known()
		if !ok {
			return nil
		}
		parts = append(parts, s)
	}
	schema, name := "", parts[len(parts)-1]
	if len(parts) == 2 {
		schema = parts[0]
	}
	t, _ := pol.Match(schema, name)
	if t == nil {
		return nil
	}
	return []analysis.Diagnostic{{Pos: call.Pos(), End: call.End(), Category: rulecode.CopyFrom,
		Message: fmt.Sprintf("%s: CopyFrom(%s) into protected table %s cannot carry an epoch: insert the rows with INSERT … SELECT FROM unnest($1::…[]) through sqlfence under an epoch",
			rulecode.CopyFrom, strings.Join(parts, "."), t.QualifiedName)}}
}
