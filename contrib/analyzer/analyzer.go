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
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"sync"
	"time"

	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
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
A code after the marker limits it to that rule; a reason is required.

Without -dsn, statements are decided from their text and the policy's names, as the
driver does under resolve: none. With -dsn DSN they are decided with that database's
catalog, as the driver decides them under resolve: catalog (the default): writes
through partitions, inheritance children and views of protected tables, functions
judged by their bodies, triggers, rules and foreign-key actions. Give the DSN of a
database migrated to the schema the application runs against, or of an empty scratch
database and -migrations DIR: the directory's up migrations (*.sql in name order,
*.down.sql skipped, a file's "-- +goose Down" or "-- migrate:down" half cut) are
applied to it inside a transaction that is rolled back once the catalog is read.`

func newAnalyzer(pol *sqlfence.Policy) *analysis.Analyzer {
	a := &analysis.Analyzer{
		Name: "sqlfence",
		Doc:  doc,
		URL:  "https://github.com/sqlfence/sqlfence/tree/main/contrib/analyzer",
	}
	var path, dsn, migrations string
	if pol == nil {
		a.Flags.StringVar(&path, "policy", "", "sqlfence policy file (default $"+sqlfence.PolicyEnv+"); under go vet give an absolute path, since vet runs the tool in each package's directory")
	}
	a.Flags.StringVar(&dsn, "dsn", "", "decide with this database's catalog, as the driver does under resolve: catalog (the default): partitions, children and views of protected tables, functions by their bodies, triggers, rules; read once per process (under go vet, once per package)")
	a.Flags.StringVar(&migrations, "migrations", "", "with -dsn of an empty scratch database: apply the up migrations of this directory (*.sql in name order) there, in a transaction rolled back once the catalog is read, and decide with the schema they make")
	load := sync.OnceValues(func() (*rules, error) {
		p := pol
		if p == nil {
			var err error
			if p, err = LoadPolicy(path); err != nil {
				return nil, err
			}
		}
		if dsn == "" {
			if migrations != "" {
				return nil, errors.New("sqlfence: -migrations needs -dsn: the DSN of an empty scratch database to apply them to (inside a transaction that is rolled back)")
			}
			return &rules{pol: p, plan: p.Plan}, nil
		}
		pl, err := planner(p, dsn, migrations)
		if err != nil {
			return nil, err
		}
		return &rules{pol: p, plan: pl.Plan}, nil
	})
	a.Run = func(pass *analysis.Pass) (any, error) {
		r, err := load()
		if err != nil {
			return nil, err
		}
		run(pass, r)
		return nil, nil
	}
	return a
}

// rules are what the analyzer judges by: the policy, and the decision of a statement
// — from its text alone, or with the catalog of the -dsn database.
type rules struct {
	pol  *sqlfence.Policy
	plan func(query string) sqlfence.Plan
}

// planner reads the catalog of the database at dsn, as a connector to it would; with
// migrations, of the schema the migrations of that directory make there (read in a
// transaction that is rolled back).
func planner(pol *sqlfence.Policy, dsn, migrations string) (*sqlfence.Planner, error) {
	var ms []cmdutil.Migration
	if migrations != "" {
		var err error
		if ms, err = cmdutil.ReadMigrations(migrations); err != nil {
			return nil, fmt.Errorf("sqlfence: -migrations: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := cmdutil.Connect(ctx, dsn, 0)
	if err != nil {
		return nil, fmt.Errorf("sqlfence: -dsn: %w", err)
	}
	// Closing the connection ends the session, and the server rolls back the
	// migrations' transaction with it: nothing of them stays in the database.
	defer conn.Close(context.Background())
	if ms != nil {
		if err := cmdutil.ApplyMigrations(ctx, conn, migrations, ms); err != nil {
			return nil, fmt.Errorf("sqlfence: -dsn: %w", err)
		}
	}
	pl, err := pol.Planner(ctx, cmdutil.QueryFunc(conn))
	if err != nil {
		return nil, fmt.Errorf("sqlfence: -dsn: the policy %s against %s: %w", pol.Source, cmdutil.DescribeTarget(conn.Config()), err)
	}
	return pl, nil
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

func run(pass *analysis.Pass, r *rules) {
	ev := newEvaluator(pass)
	for _, f := range pass.Files {
		ignores := newIgnores(pass, f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			site, ok := classify(pass.TypesInfo, call)
			if !ok || ev.plainHandle(call) {
				return true
			}
			for _, d := range judge(r, ev, call, site) {
				ignores.report(d)
			}
			return true
		})
		ignores.settle()
	}
}

// judge decides one database call: the diagnostics it deserves, before suppressions.
func judge(r *rules, ev *evaluator, call *ast.CallExpr, site callSite) []analysis.Diagnostic {
	arg := call.Args[site.arg]
	if site.copyFrom {
		return copyFromDiagnostics(r, ev, call, site)
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
		err := decide(r, s)
		var e *sqlfence.Error
		if err == nil || site.byShape && errors.As(err, &e) && e.Code == rulecode.ParseError {
			return nil
		}
		return []analysis.Diagnostic{refusalDiagnostic(call, site, err)}
	}
	if table := text.protectedWrite(r.pol); table != "" {
		return []analysis.Diagnostic{dynamicWrite(call, site, table)}
	}
	return nil
}

// dynamicWrite is SF805: a call that writes a protected table with SQL (or, for
// CopyFrom, a table or column list) known only at run time.
func dynamicWrite(call *ast.CallExpr, site callSite, table string) analysis.Diagnostic {
	return analysis.Diagnostic{
		Pos: call.Pos(), End: call.End(), Category: rulecode.DynamicWrite,
		Message: fmt.Sprintf("%s: this %s writes protected table %s with SQL built at run time, so no check before it runs can tell whether the driver fences or refuses it; build the statement from constants, with parameters ($1, $2…) for the values",
			rulecode.DynamicWrite, site.name, table),
	}
}

// decide is the driver's verdict on a statement sent from application code: the
// engine's refusal, or, for a write to a claim table's epoch or status column, the
// refusal the driver gives every caller but its claim helpers.
func decide(r *rules, query string) error {
	pol, plan := r.pol, r.plan(query)
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
