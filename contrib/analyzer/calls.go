// Which calls carry SQL text: by the method's package and receiver type, or, for
// interfaces an application declares itself (sqlc's DBTX), by the method's shape.

package analyzer

import (
	"go/ast"
	"go/types"
	"strings"
)

// callSite is a database call and where its SQL text is.
type callSite struct {
	name string // what the call is, for messages: "(*sql.DB).ExecContext call"
	arg  int    // the index of the argument that is the SQL text (or CopyFrom's table)
	// questionMarks: the library numbers ? placeholders itself ($1, $2, …) before
	// the text reaches the driver (GORM, bun, sqlx's Rebind).
	questionMarks bool
	copyFrom      bool // arg is a pgx.Identifier naming the table COPY FROM writes
	// named: sqlx compiles the text's :name parameters into $1, $2, … first.
	named bool
	// byShape: the call was recognised by its method's shape alone, so its text
	// may not be SQL at all: text that does not parse is not reported.
	byShape bool
}

// The packages whose methods take SQL text.
const (
	pkgSQL      = "database/sql"
	pkgPgx      = "github.com/jackc/pgx/v5"
	pkgPgxpool  = "github.com/jackc/pgx/v5/pgxpool"
	pkgPgxfence = "github.com/sqlfence/sqlfence/pgxfence"
	pkgSqlx     = "github.com/jmoiron/sqlx"
	pkgGorm     = "gorm.io/gorm"
	pkgBun      = "github.com/uptrace/bun"
)

// sqlMethods: database/sql's methods (and the same names on types that wrap it) →
// the index of the query argument.
var sqlMethods = map[string]int{
	"Exec": 0, "Query": 0, "QueryRow": 0, "Prepare": 0,
	"ExecContext": 1, "QueryContext": 1, "QueryRowContext": 1, "PrepareContext": 1,
}

// pgxMethods: pgx's methods → the index of the SQL argument (ctx comes first).
var pgxMethods = map[string]int{"Exec": 1, "Query": 1, "QueryRow": 1, "Prepare": 2, "CopyFrom": 1}

// sqlxMethods: what sqlx adds to database/sql's names.
var sqlxMethods = map[string]int{
	"Queryx": 0, "QueryRowx": 0, "MustExec": 0, "Preparex": 0, "Get": 1, "Select": 1,
	"QueryxContext": 1, "QueryRowxContext": 1, "MustExecContext": 1, "PreparexContext": 1,
	"GetContext": 2, "SelectContext": 2,
}

// classify says whether call is a database call that takes SQL text, and where.
func classify(info *types.Info, call *ast.CallExpr) (callSite, bool) {
	fn := funcOf(info, call)
	if fn == nil || fn.Pkg() == nil {
		return callSite{}, false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil {
		return callSite{}, false
	}
	name, pkg := fn.Name(), fn.Pkg().Path()
	recv := recvName(sig)
	site := func(arg int) (callSite, bool) {
		s := callSite{name: describe(fn, recv), arg: arg}
		if arg >= len(call.Args) || !isString(sig, arg) && !(name == "CopyFrom" && pkg != pkgSQL) {
			return callSite{}, false
		}
		return s, true
	}
	switch {
	case sig.Recv() == nil:
		// sqlx's package functions: sqlx.Get(db, &dest, query, args...).
		if pkg == pkgSqlx {
			if i, ok := sqlxNamedFuncs[name]; ok {
				s, ok := site(i)
				s.named = true
				return s, ok
			}
			switch name {
			case "Get", "Select", "MustExec":
				return site(map[string]int{"Get": 2, "Select": 2, "MustExec": 1}[name])
			case "GetContext", "SelectContext", "MustExecContext":
				return site(map[string]int{"GetContext": 3, "SelectContext": 3, "MustExecContext": 2}[name])
			}
		}
		return callSite{}, false
	case pkg == pkgSQL && (recv == "DB" || recv == "Tx" || recv == "Conn"):
		if i, ok := sqlMethods[name]; ok {
			return site(i)
		}
	case pkg == pkgPgx && (recv == "Conn" || recv == "Tx") || pkg == pkgPgxpool || pkg == pkgPgxfence:
		if i, ok := pgxMethods[name]; ok {
			s, ok := site(i)
			s.copyFrom = name == "CopyFrom"
			return s, ok
		}
	case pkg == pkgPgx && recv == "Batch" && name == "Queue":
		return site(0)
	case pkg == pkgSqlx:
		if i, ok := sqlxNamedMethods[name]; ok {
			s, ok := site(i)
			s.named = true
			return s, ok
		}
		if i, ok := sqlxMethods[name]; ok {
			return site(i)
		}
		if i, ok := sqlMethods[name]; ok {
			return site(i)
		}
	case pkg == pkgGorm && recv == "DB" && (name == "Raw" || name == "Exec"):
		s, ok := site(0)
		s.questionMarks = true
		return s, ok
	case pkg == pkgBun && (recv == "DB" || recv == "Tx" || recv == "Conn" || recv == "IDB"):
		i, ok := map[string]int{"NewRaw": 0, "Exec": 0, "Query": 0, "QueryRow": 0, "ExecContext": 1, "QueryContext": 1, "QueryRowContext": 1}[name]
		if !ok {
			return callSite{}, false
		}
		s, ok := site(i)
		s.questionMarks = true
		return s, ok
	}
	// Anything else with a database method's shape: sqlc's DBTX, a repository's
	// Querier, an application's own wrapper of a pool.
	return shaped(fn, sig, call, recv)
}

// shaped recognises a method by its shape: database/sql's methods take (query string,
// args ...any) after an optional context, pgx's (ctx, sql string, args ...any).
func shaped(fn *types.Func, sig *types.Signature, call *ast.CallExpr, recv string) (callSite, bool) {
	if sig.Recv() == nil {
		return callSite{}, false
	}
	params := sig.Params()
	if fn.Name() == "CopyFrom" {
		// sqlc's DBTX for pgx: CopyFrom(ctx, pgx.Identifier, []string, pgx.CopyFromSource).
		if params.Len() == 4 && len(call.Args) == 4 && isContext(params.At(0).Type()) && isNamed(params.At(1).Type(), pkgPgx, "Identifier") {
			return callSite{name: describe(fn, recv), arg: 1, copyFrom: true, byShape: true}, true
		}
		return callSite{}, false
	}
	i, ok := sqlMethods[fn.Name()]
	if !ok {
		return callSite{}, false
	}
	if strings.HasSuffix(fn.Name(), "Context") || params.Len() > 0 && isContext(params.At(0).Type()) {
		i = 1
	}
	if fn.Name() == "Prepare" || fn.Name() == "PrepareContext" {
		if params.Len() == 3 && i == 1 {
			i = 2 // pgx: Prepare(ctx, name, sql)
		}
		if params.Len() != i+1 {
			return callSite{}, false
		}
	} else if !sig.Variadic() || params.Len() != i+2 {
		return callSite{}, false
	}
	if i >= len(call.Args) || !isString(sig, i) || i > 0 && !isContext(params.At(0).Type()) {
		return callSite{}, false
	}
	return callSite{name: describe(fn, recv), arg: i, byShape: true}, true
}

func recvName(sig *types.Signature) string {
	if sig.Recv() == nil {
		return ""
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

func describe(fn *types.Func, recv string) string {
	pkg := fn.Pkg().Name()
	if recv == "" {
		return pkg + "." + fn.Name() + " call"
	}
	return pkg + "." + recv + "." + fn.Name() + " call"
}

func isString(sig *types.Signature, i int) bool {
	params := sig.Params()
	if i >= params.Len() {
		return false
	}
	b, ok := params.At(i).Type().Underlying().(*types.Basic)
	return ok && b.Kind() == types.String
}

func isContext(t types.Type) bool { return isNamed(t, "context", "Context") }

func isNamed(t types.Type, pkg, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}
