// Functions by what they can do: which calls a fenced connection runs.

package engine

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgfunc"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// admitCalls judges every function call anywhere under root, in every syntax: f(x);
// the attribute notation t.f and (x).f, which PostgreSQL reads as f(t) and f(x) when
// f is not a column of t or a field of x — the last name of a qualified column
// reference may be a call of the row, every field name of an indirection a call of
// whatever precedes it; and operators, which call their functions.
func admitCalls(p *Policy, root protoreflect.Message) *Error {
	err := p.judgeBoundAlways() // catalog_bound.go: implicit casts
	pgtree.WalkNodes(root.Interface(), func(m proto.Message) bool {
		if err != nil {
			return false
		}
		switch n := m.(type) {
		case *pg.FuncCall:
			if !p.columnNotation(n) {
				err = judgeCall(p, n.Funcname, n.Args, "call")
			}
		case *pg.ColumnRef:
			if len(n.Fields) > 1 {
				err = judgeAttributes(p, n.Fields[len(n.Fields)-1:], false)
			}
		case *pg.A_Indirection:
			err = judgeAttributes(p, n.Indirection, true)
		case *pg.A_Expr, *pg.SubLink, *pg.SortBy, *pg.CaseExpr, *pg.JoinExpr:
			err = judgeOperators(p, n) // catalog_operators.go
		case *pg.RangeVar:
			err = p.judgeBoundRead(n) // a view's query, a policy
		case *pg.TypeName:
			err = p.judgeBoundType(n) // a domain's checks, a cast
		}
		return err == nil
	})
	return err
}

// columnNotation reports whether f, written as a call, cannot call anything: the
// functional notation for a column, qty(o) for o.qty. PostgreSQL reads a call of an
// unqualified name with one argument and no decoration (*, DISTINCT, ORDER BY,
// FILTER, OVER, VARIADIC, a named argument) whose argument is a row as the row's
// column of that name when it has one, before it looks for a function; with no
// function of that name at all — no built-in, no user function in any schema, by
// the server's catalog (resolve: catalog) — it is that column, or an error, or a
// cast to a type of that name, which the notation x::type reaches as well. The
// argument is a column reference, the way a row is named (o, o.*, t.col). The
// argument itself is judged with everything else.
func (p *Policy) columnNotation(f *pg.FuncCall) bool {
	if p.catalog == nil || len(f.Funcname) != 1 || len(f.Args) != 1 || f.Args[0].GetColumnRef() == nil ||
		f.AggStar || f.AggDistinct || len(f.AggOrder) > 0 || f.AggFilter != nil || f.Over != nil || f.FuncVariadic || f.AggWithinGroup {
		return false
	}
	name := f.Funcname[0].GetString_().GetSval()
	if name == "" || p.MatchFunction("", name) || p.matchSafeFunction("", name) {
		return false
	}
	if _, ok := p.builtinVolatility(name); ok {
		return false
	}
	return len(p.catalog.candidates("", name)) == 0 && !p.catalog.typeBound(name)
}

// judgeAttributes judges the names in column position among fields as the calls
// they may be (x.f is f(x) when x has no column f). Which it is depends on x's
// columns, so a name is refused only when a call of it would be: a function the
// policy lists, a built-in sqlfence refuses, or — with resolve: catalog — a user
// function of that name, in any schema, that the notation can reach and sqlfence
// refuses (judgeAttributeCall). A name that reaches nothing refused is read as the column it most often is; without
// the catalog a user function called this way is not seen (docs/policy.md, "What
// sqlfence cannot see"). anyArg says the argument may be of any type ((t.c).f); otherwise it
// is a whole row, which none of the built-ins sqlfence refuses takes (so a column
// named system is not taken for the table-sampling handler).
func judgeAttributes(p *Policy, fields []*pg.Node, anyArg bool) *Error {
	for _, f := range fields {
		fn := f.GetString_().GetSval()
		if fn == "" {
			continue // a subscript or *
		}
		shown := QualifiedName{Name: fn}.String()
		how := "a call in attribute notation (x." + fn + " is " + fn + "(x) when x has no column " + fn + ")"
		if p.MatchFunction("", fn) {
			return refuse(rulecode.ListedFunction, nil, how+" of "+shown+", which the policy lists as writing protected tables",
				"write the tables with plain statements under an epoch; if "+fn+" is a column, select it under another name through a view")
		}
		if p.matchSafeFunction("", fn) {
			continue
		}
		if anyArg && pgfunc.RunsQueryText(fn) {
			return refuse(rulecode.SQLTextFunction, nil, how+" of "+shown+", which runs the SQL text it is given where sqlfence cannot read it",
				"run the query itself through the driver")
		}
		if v, ok := p.builtinVolatility(fn); anyArg && ok && v == pgfunc.Volatile && !pgfunc.HarmlessVolatile(fn) && fn != "set_config" {
			return refuse(rulecode.VolatileBuiltin, nil, how+" of the volatile built-in "+shown+", which is not on sqlfence's list of built-ins that cannot write tables or change how statements are read",
				"call it outside the driver (a separate connection without sqlfence)")
		}
		if e := p.judgeAttributeCall(fn, shown, how, anyArg); e != nil {
			return e
		}
	}
	return nil
}

// judgeCall decides whether a call of the function or procedure name may run on a
// fenced connection. A function can write anything, and no epoch reaches inside it,
// so a call passes only when sqlfence can tell it writes no protected table: a
// built-in that cannot (PostgreSQL forbids STABLE and IMMUTABLE functions to write;
// the volatile built-ins are reviewed one by one), a function the policy declares
// safe, or — with resolve: catalog — a user function whose body, and everything it
// calls, the catalog shows writes none (catalog.go). An unqualified name may resolve
// to a user function of that name in any schema, even one that shadows a built-in,
// so every one is judged. how is "call" or "CALL", for messages.
func judgeCall(p *Policy, name []*pg.Node, args []*pg.Node, how string) *Error {
	schema, fn := pgtree.FuncName(name)
	shown := nameOf(name)
	if fn == "" {
		return refuse(rulecode.UnjudgedCall, nil, how+" of a function sqlfence cannot name", "call functions by name")
	}
	if e := p.refuseGuardRoutine(schema, fn, shown, how); e != nil {
		return e // settings.go
	}
	if p.MatchFunction(schema, fn) {
		return refuse(rulecode.ListedFunction, nil, how+" of "+shown+", which the policy lists as writing protected tables",
			"write the tables with plain statements under an epoch, or call it through sqlfence.Unfenced")
	}
	if p.matchSafeFunction(schema, fn) {
		return nil
	}
	builtin := false
	if schema == "" || schema == "pg_catalog" {
		switch {
		case fn == "set_config":
			if e := admitSetConfig(args); e != nil {
				return e
			}
			builtin = true
		case fn == "setval":
			if e := admitSetval(args); e != nil {
				return e
			}
		case pgfunc.RunsQueryText(fn):
			return refuse(rulecode.SQLTextFunction, nil, how+" of "+shown+", which runs the SQL text it is given where sqlfence cannot read it",
				"run the query itself through the driver")
		}
		if v, ok := p.builtinVolatility(fn); ok && !builtin {
			if v == pgfunc.Volatile && !pgfunc.HarmlessVolatile(fn) {
				return refuse(rulecode.VolatileBuiltin, nil, how+" of the volatile built-in "+shown+", which is not on sqlfence's list of built-ins that cannot write tables or change how statements are read",
					"call it outside the driver (a separate connection without sqlfence)")
			}
			builtin = true
		}
	}
	if p.extensionCall(schema, fn) {
		return nil // extensions.go
	}
	if p.catalog != nil && schema != "pg_catalog" {
		if e, found := p.judgeUserCall(schema, fn, shown, how); found || e != nil {
			return e
		}
	}
	if builtin {
		return nil
	}
	if p.catalog != nil {
		return refuse(rulecode.UnjudgedCall, nil, how+" of "+shown+": no function of that name was in the catalog when sqlfence read it",
			"create it before the application connects, or through the driver with `ddl: allow`; or list it under safe_functions: in the policy")
	}
	return refuse(rulecode.UnjudgedCall, nil, how+" of "+shown+": sqlfence cannot tell whether it writes a protected table (no epoch reaches inside a function)",
		"if it writes no protected table, list it under safe_functions: in the policy; if it does, write those tables with plain statements under an epoch")
}

// matchSafeFunction reports whether a call certainly reaches a function the policy
// declares safe. An unqualified call may resolve to any schema on the search path, so
// only an unqualified entry covers it; a qualified call is covered by an entry with
// that schema or an unqualified one.
func (p *Policy) matchSafeFunction(schema, name string) bool {
	for _, f := range p.SafeFunctions {
		if f.Name == name && (f.Schema == "" || f.Schema == schema) {
			return true
		}
	}
	return false
}

// systemRelation reports whether a written relation may be a system catalog or view:
// pg_settings is a view whose update rule calls set_config, so UPDATE pg_settings
// changes settings.
func systemRelation(rv *pg.RangeVar) bool {
	switch rv.Schemaname {
	case "pg_catalog", "information_schema":
		return true
	case "":
		return strings.HasPrefix(rv.Relname, "pg_")
	}
	return false
}
