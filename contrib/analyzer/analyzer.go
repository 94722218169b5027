// Package analyzer is sqlfence's Go analyzer: it finds the SQL text that reaches
// database calls (database/sql, pgx and the pgx front, sqlx, GORM, bun, sqlc's
// generated code) and reports, at the call, every statement the sqlfence driver
// would refuse under the application's policy, decided by the driver's own engine
// (Policy.Plan). A protected write whose text cannot be known statically is reported
// with a code of its own (SF805), so a team can choose its severity.
//
// Run it with go vet (cmd/sqlfence-vet), as a golangci-lint module plugin (package
// golangci) or through the analysis framework's own drivers.
package analyzer

import (
	"errors"
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"sync"

	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Analyzer reads its policy from the -policy flag, or from $SQLFENCE_POLICY when the
// flag is empty.
var Analyzer = newAnalyzer(nil)

// New returns an analyzer that judges statements under pol, for programs and tests
// that load the policy themselves.
func New(pol *sqlfence.Policy) *analysis.Analyzer { return newAnalyzer(pol) }

const doc = `report SQL the sqlfence driver would refuse, at the database call

The analyzer follows constant SQL text — literals, constants (sqlc's generated
queries among them), constant concatenation, fmt.Sprintf with a constant format, local
variables assigned once and helpers that return one expression — into the query
arguments of database/sql, pgx, pgxpool, the sqlfence pgx front, sqlx, GORM and bun,
and decides each statement with the driver's engine under the policy (-policy PATH or
$SQLFENCE_POLICY). Every refusal is reported with its rule code; a write to a
protected table whose text is not known statically is SF805. Suppress a report with
a comment on the call's line or the line before it:
	//sqlfence:ignore SF301 nightly reset, runs under the guard override
A code after the marker limits it to that rule; a reason is required.`

func newAnalyzer(pol *sqlfence.Policy) *analysis.Analyzer {
	a := &analysis.Analyzer{
		Name: "sqlfence",
		Doc:  doc,
		URL:  "https://github.com/sqlfence/sqlfence/tree/main/contrib/analyzer",
	}
	var path string
	if pol == nil {
		a.Flags.StringVar(&path, "policy", "", "sqlfence policy file (default $"+sqlfence.PolicyEnv+"); under go vet give an absolute path, since vet runs the tool in each package's directory")
	}
	load := sync.OnceValues(func() (*sqlfence.Policy, error) {
		if pol != nil {
			return pol, nil
		}
		return LoadPolicy(path)
	})
	a.Run = func(pass *analysis.Pass) (any, error) {
		p, err := load()
		if err != nil {
			return nil, err
		}
		run(pass, p)
		return nil, nil
	}
	return a
}

// LoadPolicy loads the policy file at path, or at $SQLFENCE_POLICY when path is "",
// with messages that say how to give one.
func LoadPolicy(path string) (*sqlfence.Policy, error) {
	if path == "" {
		path = os.Getenv(sqlfence.PolicyEnv)
	}
	if path == "" {
		return nil, fmt.Errorf("sqlfence: no policy: give -policy PATH (for example -policy $PWD/sqlfence.yaml) or set %s", sqlfence.PolicyEnv)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("sqlfence: policy file %s does not exist; give the path of your sqlfence policy with -policy (an absolute path under go vet)", path)
		}
		return nil, fmt.Errorf("sqlfence: policy file %s: %w", path, err)
	}
	return sqlfence.LoadPolicy(path)
}

func run(pass *analysis.Pass, pol *sqlfence.Policy) {
	ev := newEvaluator(pass)
	for _, f := range pass.Files {
		ignores := newIgnores(pass, f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			site, ok := classify(pass.TypesInfo, call)
			if !ok {
				return true
			}
			for _, d := range judge(pol, ev, call, site) {
				ignores.report(d)
			}
			return true
		})
		ignores.settle()
	}
}

// judge decides one database call: the diagnostics it deserves, before suppressions.
func judge(pol *sqlfence.Policy, ev *evaluator, call *ast.CallExpr, site callSite) []analysis.Diagnostic {
	arg := call.Args[site.arg]
	if site.copyFrom {
		return copyFromDiagnostics(pol, ev, call, arg)
	}
	text := ev.eval(arg, nil, 0)
	if site.questionMarks {
		text = text.numberQuestionMarks()
	}
	if site.named {
		var ok bool
		if text, ok = text.compileNamed(bindDollar); !ok {
			return nil // sqlx returns an error and sends nothing
		}
	}
	if s, ok := text.known(); ok {
		err := decide(pol, s)
		var e *sqlfence.Error
		if err == nil || site.byShape && errors.As(err, &e) && e.Code == rulecode.ParseError {
			return nil
		}
		return []analysis.Diagnostic{refusalDiagnostic(call, site, err)}
	}
	if table := text.protectedWrite(pol); table != "" {
		return []analysis.Diagnostic{{
			Pos: call.Pos(), End: call.End(), Category: rulecode.DynamicWrite,
			Message: fmt.Sprintf("%s: this %s writes protected table %s with SQL built at run time, so no check before it runs can tell whether the driver fences or refuses it; build the statement from constants, with parameters ($1, $2…) for the values",
				rulecode.DynamicWrite, site.name, table),
		}}
	}
	return nil
}

// decide is the driver's verdict on a statement sent from application code: the
// engine's refusal, or, for a write to a claim table's epoch or status column, the
// refusal the driver gives every caller but its claim helpers.
func decide(pol *sqlfence.Policy, query string) error {
	plan := pol.Plan(query)
	if plan.Err != nil || plan.ClaimTable == "" {
		return plan.Err
	}
	cols := "epoch or status column"
	if q, err := sqlfence.ParseQualifiedName(plan.ClaimTable); err == nil {
		if c := pol.MatchClaim(q.Schema, q.Name); c != nil {
			cols = sqlident.Quote(c.StatusColumn) + " or " + sqlident.Quote(c.EpochColumn) + " column"
		}
	}
	return &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.ClaimWrite, Table: plan.ClaimTable, Statement: query,
		Reason: "the statement writes the claim table's " + cols + " outside sqlfence's claim helpers: a claim that does not increment the epoch gives its job no token",
		Fix:    "claim, renew and complete jobs with the helpers in github.com/sqlfence/sqlfence/claim"}
}

func refusalDiagnostic(call *ast.CallExpr, site callSite, err error) analysis.Diagnostic {
	var e *sqlfence.Error
	code, msg := "", err.Error()
	if errors.As(err, &e) {
		code, msg = e.Code, e.Reason
		if e.Table != "" {
			msg = "table " + e.Table + ": " + msg
		}
		if e.Fix != "" {
			msg += "; " + e.Fix
		}
	}
	return analysis.Diagnostic{Pos: call.Pos(), End: call.End(), Category: code,
		Message: fmt.Sprintf("%s: sqlfence would refuse the SQL of this %s: %s", code, site.name, msg)}
}

// funcOf is the function or method a call invokes, nil for conversions, builtins and
// calls of function values.
func funcOf(info *types.Info, call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = fun
	case *ast.SelectorExpr:
		id = fun.Sel
	case *ast.IndexExpr: // a generic function instantiated explicitly
		if s, ok := fun.X.(*ast.SelectorExpr); ok {
			id = s.Sel
		} else if i, ok := fun.X.(*ast.Ident); ok {
			id = i
		}
	}
	if id == nil {
		return nil
	}
	f, _ := info.Uses[id].(*types.Func)
	return f
}
