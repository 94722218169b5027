// What SQL text an expression holds, as far as the source shows it: constants,
// concatenation, fmt.Sprintf with a constant format, locals assigned once and
// same-package helpers that return one expression. Whatever else stays a hole.

package analyzer

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strconv"

	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence"
)

// maxDepth bounds how far the evaluator follows variables and helpers.
const maxDepth = 8

// text is SQL text as a sequence of known parts and holes (text not known before
// the program runs).
type text struct{ parts []part }

type part struct {
	s    string
	hole bool
}

func knownText(s string) text { return text{parts: []part{{s: s}}} }

var holeText = text{parts: []part{{hole: true}}}

func (t text) concat(u text) text {
	out := text{parts: append(append([]part(nil), t.parts...), u.parts...)}
	return out
}

// known returns the text when no part of it is a hole.
func (t text) known() (string, bool) {
	s := ""
	for _, p := range t.parts {
		if p.hole {
			return "", false
		}
		s += p.s
	}
	return s, true
}

// evaluator evaluates expressions of one package.
type evaluator struct {
	pass *analysis.Pass
	// values lists, for each variable of the package, every value assigned to it
	// (declarations included; for += the text appended), nil for a value the source
	// does not show: a tuple, a range, an address taken, after which anything may
	// write it.
	values map[*types.Var][]ast.Expr
	// returns holds each function of the package whose body is a single return
	// statement of one expression.
	returns map[*types.Func]*ast.FuncDecl
	// busy are the variables being evaluated, so that q = q + "…" ends.
	busy map[*types.Var]bool
	// sources are what each variable is assigned from, one entry per assignment:
	// its value, or the call whose first result it takes (db, err := sql.Open(…));
	// nil where that cannot be told (its address taken, a range variable).
	sources map[*types.Var][]ast.Expr
}

// emptyString is the value of var q string.
var emptyString = &ast.BasicLit{Kind: token.STRING, Value: `""`}

func newEvaluator(pass *analysis.Pass) *evaluator {
	ev := &evaluator{pass: pass, values: map[*types.Var][]ast.Expr{}, returns: map[*types.Func]*ast.FuncDecl{},
		busy: map[*types.Var]bool{}, sources: map[*types.Var][]ast.Expr{}}
	record := func(id ast.Expr, value, source ast.Expr) {
		ident, ok := ast.Unparen(id).(*ast.Ident)
		if !ok {
			return
		}
		if v, ok := pass.TypesInfo.ObjectOf(ident).(*types.Var); ok {
			ev.values[v] = append(ev.values[v], value)
			ev.sources[v] = append(ev.sources[v], source)
		}
	}
	assign := func(id ast.Expr, value ast.Expr) { record(id, value, value) }
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					var value ast.Expr
					switch {
					case len(n.Lhs) == len(n.Rhs) && (n.Tok == token.ASSIGN || n.Tok == token.DEFINE || n.Tok == token.ADD_ASSIGN):
						value = n.Rhs[i]
					case i == 0 && len(n.Rhs) == 1 && n.Tok != token.ADD_ASSIGN && ev.returnsQuery(n.Rhs[0]):
						// q, args, err := sqlx.Named(…): q is the call's query.
						value = n.Rhs[0]
					case i == 0 && len(n.Rhs) == 1 && n.Tok != token.ADD_ASSIGN:
						// db, err := sql.Open(…): db's source is the call.
						record(l, nil, n.Rhs[0])
						continue
					}
					assign(l, value)
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					switch {
					case len(n.Values) == len(n.Names):
						assign(name, n.Values[i])
					case len(n.Values) == 0:
						assign(name, emptyString)
					default:
						assign(name, nil)
					}
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					assign(n.X, nil)
				}
			case *ast.RangeStmt:
				assign(n.Key, nil)
				if n.Value != nil {
					assign(n.Value, nil)
				}
			case *ast.FuncDecl:
				if n.Body != nil && len(n.Body.List) == 1 {
					if r, ok := n.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						if fn, ok := pass.TypesInfo.Defs[n.Name].(*types.Func); ok {
							ev.returns[fn] = n
						}
					}
				}
			}
			return true
		})
	}
	return ev
}

// env binds a helper's parameters to the text of the call's arguments.
type env map[*types.Var]text

// eval returns the text of e.
func (ev *evaluator) eval(e ast.Expr, bound env, depth int) text {
	info := ev.pass.TypesInfo
	if tv, ok := info.Types[e]; ok && tv.Value != nil {
		if tv.Value.Kind() == constant.String {
			return knownText(constant.StringVal(tv.Value))
		}
		return knownText(tv.Value.ExactString())
	}
	if depth > maxDepth {
		return holeText
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return ev.eval(e.X, bound, depth+1)
	case *ast.BinaryExpr:
		if e.Op == token.ADD && isStringType(info.TypeOf(e)) {
			return ev.eval(e.X, bound, depth+1).concat(ev.eval(e.Y, bound, depth+1))
		}
	case *ast.Ident:
		v, ok := info.Uses[e].(*types.Var)
		if !ok {
			break
		}
		if t, ok := bound[v]; ok {
			return t
		}
		return ev.variable(v, depth)
	case *ast.CallExpr:
		return ev.call(e, bound, depth)
	case *ast.BasicLit: // emptyString
		if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
			return knownText(s)
		}
	}
	return holeText
}

// variable is the text of a variable: its value when it is assigned once (a local,
// or an unexported package variable, which no other package can assign), and
// otherwise every value it is assigned with holes between them — never known, but
// what protectedWrite reads for a statement built in steps.
func (ev *evaluator) variable(v *types.Var, depth int) text {
	values := ev.values[v]
	if ev.busy[v] || len(values) == 0 || v.Exported() && v.Pkg() != nil && v.Parent() == v.Pkg().Scope() {
		return holeText
	}
	ev.busy[v] = true
	defer delete(ev.busy, v)
	if len(values) == 1 && values[0] != nil {
		return ev.eval(values[0], nil, depth+1)
	}
	out := holeText
	for _, value := range values {
		if value != nil {
			out = out.concat(ev.eval(value, nil, depth+1)).concat(holeText)
		}
	}
	return out
}

func (ev *evaluator) call(call *ast.CallExpr, bound env, depth int) text {
	fn := funcOf(ev.pass.TypesInfo, call)
	if fn == nil {
		return holeText
	}
	if q, bind, ok := ev.sqlxQuery(call, fn); ok {
		t := ev.eval(call.Args[q], bound, depth+1)
		if bind == 0 {
			return t
		}
		if t, ok = t.compileNamed(bind); !ok {
			return holeText
		}
		return t
	}
	if call.Ellipsis.IsValid() {
		return holeText
	}
	if fn.Pkg() != nil && fn.Pkg().Path() == "fmt" && fn.Name() == "Sprintf" && len(call.Args) > 0 {
		return ev.sprintf(call, bound, depth)
	}
	if fn.Pkg() != nil && fn.Pkg().Path() == pkgSqlx && fn.Name() == "Rebind" && len(call.Args) > 0 {
		// (*sqlx.DB).Rebind(query), or sqlx.Rebind(sqlx.DOLLAR, query): ? becomes $n.
		return ev.eval(call.Args[len(call.Args)-1], bound, depth+1).numberQuestionMarks()
	}
	decl, ok := ev.returns[fn.Origin()]
	if !ok {
		return holeText
	}
	// A helper in this package: evaluate its one returned expression with its
	// parameters bound to the arguments.
	inner := env{}
	i := 0
	for _, field := range decl.Type.Params.List {
		for _, name := range field.Names {
			if v, ok := ev.pass.TypesInfo.Defs[name].(*types.Var); ok && i < len(call.Args) {
				if _, variadic := field.Type.(*ast.Ellipsis); !variadic {
					inner[v] = ev.eval(call.Args[i], bound, depth+1)
				}
			}
			i++
		}
	}
	if len(decl.Type.Params.List) > 0 && len(decl.Type.Params.List[0].Names) == 0 {
		return holeText
	}
	return ev.eval(decl.Body.List[0].(*ast.ReturnStmt).Results[0], inner, depth+1)
}

// sprintf formats fmt.Sprintf with a constant format: %s and %v of known text insert
// it, %d and %v of an integer insert a number (any integer is judged alike: the
// statement's shape does not change), %q of known text a quoted string, %% a percent
// sign; anything else is a hole.
func (ev *evaluator) sprintf(call *ast.CallExpr, bound env, depth int) text {
	format, ok := ev.eval(call.Args[0], bound, depth+1).known()
	if !ok {
		return holeText
	}
	args := call.Args[1:]
	var out text
	lit := ""
	next := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			lit += string(c)
			continue
		}
		j := i + 1
		for j < len(format) && isFlag(format[j]) {
			j++
		}
		if j >= len(format) {
			return holeText
		}
		verb := format[j]
		if verb == '%' && j == i+1 {
			lit += "%"
			i = j
			continue
		}
		if j != i+1 || next >= len(args) {
			return holeText // widths, flags, indexes, a missing argument: not followed
		}
		a := args[next]
		next++
		i = j
		var piece text
		switch t := ev.pass.TypesInfo.TypeOf(a); {
		case (verb == 's' || verb == 'v') && isStringType(t):
			piece = ev.eval(a, bound, depth+1)
		case (verb == 'd' || verb == 'v') && isInteger(t):
			piece = ev.eval(a, bound, depth+1)
			if _, known := piece.known(); !known {
				piece = knownText("1")
			}
		case verb == 'q' && isStringType(t):
			piece = holeText
			if s, ok := ev.eval(a, bound, depth+1).known(); ok {
				piece = knownText(strconv.Quote(s))
			}
		default:
			piece = holeText
		}
		out = out.concat(knownText(lit)).concat(piece)
		lit = ""
	}
	if next != len(args) {
		return holeText
	}
	return out.concat(knownText(lit))
}

func isFlag(c byte) bool {
	return c == '+' || c == '-' || c == '#' || c == ' ' || c == '0' || '1' <= c && c <= '9' || c == '.' || c == '[' || c == ']' || c == '*'
}

func isStringType(t types.Type) bool {
	b, ok := t.(*types.Basic)
	if t != nil && !ok {
		b, ok = t.Underlying().(*types.Basic)
	}
	return ok && b.Info()&types.IsString != 0
}

func isInteger(t types.Type) bool {
	if t == nil {
		return false
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// sqlxQuery recognises sqlx's functions whose first result is their query argument
// rewritten: sqlx.Named (:name → ?), sqlx.BindNamed with a constant bindvar type,
// (*sqlx.DB).BindNamed and (*sqlx.Tx).BindNamed ($n, the handle's PostgreSQL
// bindvar), and sqlx.In, whose ? for a slice becomes one ? per element — the same
// statement to the engine, which decides by shape. q is the query's argument index,
// bind the bindvar type its names become (0: In, no names).
func (ev *evaluator) sqlxQuery(call *ast.CallExpr, fn *types.Func) (q, bind int, ok bool) {
	if fn.Pkg() == nil || fn.Pkg().Path() != pkgSqlx {
		return 0, 0, false
	}
	sig, _ := fn.Type().(*types.Signature)
	method := sig != nil && sig.Recv() != nil
	switch {
	case fn.Name() == "Named" && !method && len(call.Args) == 2:
		return 0, bindQuestion, true
	case fn.Name() == "BindNamed" && method && len(call.Args) == 2:
		return 0, bindDollar, true
	case fn.Name() == "BindNamed" && !method && len(call.Args) == 3:
		if tv, ok := ev.pass.TypesInfo.Types[call.Args[0]]; ok && tv.Value != nil {
			if b, exact := constant.Int64Val(tv.Value); exact && (b == bindQuestion || b == bindDollar) {
				return 1, int(b), true
			}
		}
	case fn.Name() == "In" && !method && len(call.Args) >= 1:
		return 0, 0, true
	}
	return 0, 0, false
}

// returnsQuery says whether e is a call of one of sqlxQuery's functions, whose first
// result the evaluator can follow.
func (ev *evaluator) returnsQuery(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := funcOf(ev.pass.TypesInfo, call)
	if fn == nil {
		return false
	}
	_, _, ok = ev.sqlxQuery(call, fn)
	return ok
}

// plainHandle reports whether call's receiver is a *sql.DB every assignment of which
// is sql.Open with a constant driver name other than sqlfence's ("pgx", "postgres"):
// what runs on it never reaches the sqlfence driver, which therefore neither fences
// nor refuses it. Migrations commonly run on such a handle.
func (ev *evaluator) plainHandle(call *ast.CallExpr) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	info := ev.pass.TypesInfo
	t := info.TypeOf(sel.X)
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if !isNamed(t, pkgSQL, "DB") {
		return false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok || v.Exported() && v.Parent() == v.Pkg().Scope() {
		return false
	}
	srcs := ev.sources[v]
	if len(srcs) == 0 {
		return false // a parameter, or a field: opened elsewhere
	}
	for _, src := range srcs {
		open, ok := ast.Unparen(src).(*ast.CallExpr)
		if !ok || len(open.Args) != 2 {
			return false
		}
		fn := funcOf(info, open)
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkgSQL || fn.Name() != "Open" {
			return false
		}
		tv, ok := info.Types[open.Args[0]]
		if !ok || tv.Value == nil || tv.Value.Kind() != constant.String || constant.StringVal(tv.Value) == sqlfence.DriverName {
			return false
		}
	}
	return true
}
