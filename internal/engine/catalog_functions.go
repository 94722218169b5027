// The catalog snapshot's judgement of user functions: what a call reaches, read from
// the catalog and judged like a body created through the driver, transitively.

package engine

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgfunc"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// funcJudgment is what a routine's own body does: refused, or the user routines it
// may call.
type funcJudgment struct {
	err     *Error
	calls   []uint32
	carried []carried // the protected relations it writes, for the guard to fence
}

type verdict struct {
	err     *Error
	carried []carried
}

// candidates are the user routines a call of schema.name may reach: with no schema,
// every one of that name, since search_path decides.
func (s *catalogSnapshot) candidates(schema, name string) []*pgcatalog.Function {
	all := s.funcs[name]
	if schema == "" {
		return all
	}
	var out []*pgcatalog.Function
	for _, f := range all {
		if f.Schema == schema {
			out = append(out, f)
		}
	}
	return out
}

func funcWhat(f *pgcatalog.Function) string {
	kind := "the function "
	if f.Kind == "p" {
		kind = "the procedure "
	}
	return kind + QualifiedName{Schema: f.Schema, Name: f.Name}.String()
}

// funcName names a routine for messages.
func (s *catalogSnapshot) funcName(oid uint32) string {
	if f := s.byOID[oid]; f != nil {
		return QualifiedName{Schema: f.Schema, Name: f.Name}.String()
	}
	return "with oid " + strconv.FormatUint(uint64(oid), 10)
}

// verdict judges a user routine and, transitively, every user routine it may call:
// refused, or not, with the protected relations they write for the guard to fence
// (only when p.GuardCarries; otherwise such a write is refused).
func (s *catalogSnapshot) verdict(p *Policy, oid uint32) (*Error, []carried) {
	if v, ok := s.verdicts.Load(oid); ok {
		return v.(verdict).err, v.(verdict).carried
	}
	var carry carrySet
	from := map[uint32]uint32{oid: 0}
	queue := []uint32{oid}
	var err *Error
	for len(queue) > 0 && err == nil {
		o := queue[0]
		queue = queue[1:]
		f := s.byOID[o]
		if f == nil {
			err = refuse(rulecode.UnreadableRoutine, nil, "a routine (oid "+strconv.FormatUint(uint64(o), 10)+") that was not in the catalog when sqlfence read it",
				"if it was created since by a migration outside the driver, restart the application so sqlfence reads the catalog again")
		} else if j := s.direct(p, f); j.err != nil {
			err = j.err
		} else {
			carry.add(j.carried...)
			for _, c := range j.calls {
				if _, seen := from[c]; !seen {
					from[c] = o
					queue = append(queue, c)
				}
			}
			continue
		}
		if o != oid {
			// Name the path: "the function public.a calls public.b, which calls public.c: …".
			var chain []string
			for x := o; x != 0; x = from[x] {
				chain = append(chain, s.funcName(x))
			}
			var b strings.Builder
			if f := s.byOID[oid]; f != nil {
				b.WriteString(funcWhat(f))
			} else {
				b.WriteString("the routine " + chain[len(chain)-1])
			}
			for i := len(chain) - 2; i >= 0; i-- {
				if i == len(chain)-2 {
					b.WriteString(" calls ")
				} else {
					b.WriteString(", which calls ")
				}
				b.WriteString(chain[i])
			}
			c := *err
			c.Reason = b.String() + ": " + c.Reason
			err = &c
		}
	}
	if err != nil {
		carry.list = nil
	}
	s.verdicts.Store(oid, verdict{err, carry.list})
	return err, carry.list
}

// direct judges a routine's own body, and lists the user routines it may call. Every
// function and procedure whose body sqlfence can read (sql, plpgsql) is judged like a
// body created through the driver, whatever its volatility: refused when it writes a
// protected table, runs dynamic SQL, or calls what sqlfence refuses. Volatility is
// not proof: a STABLE or IMMUTABLE function's own statements cannot write, but its
// EXECUTE, query_to_xml or a plain call can reach a VOLATILE function that does. Only
// a C or internal function (which only a superuser can create) is taken at its
// marking when it cannot be read. Any routine's SET clauses are judged like SET.
func (s *catalogSnapshot) direct(p *Policy, f *pgcatalog.Function) *funcJudgment {
	if j, ok := s.judged.Load(f.OID); ok {
		return j.(*funcJudgment)
	}
	j := &funcJudgment{}
	what := funcWhat(f)
	for _, c := range f.Config {
		name, value, _ := strings.Cut(c, "=")
		set := &pg.VariableSetStmt{Kind: pg.VariableSetKind_VAR_SET_VALUE, Name: strings.ToLower(name), Args: []*pg.Node{pg.MakeAConstStrNode(value, 0)}}
		if !settingAllowed(name) && !setsPinnedValue(set) {
			j.err = refuseSetting(name, "SET")
		} else {
			j.err = refuseEarlyCommit(set, "SET")
		}
		if j.err != nil {
			j.err.Reason = what + " has a SET clause: " + j.err.Reason
			break
		}
	}
	switch {
	case j.err != nil:
	case f.Kind == "a":
		j.calls = f.Calls
	case reviewedExtensionFunction(f):
		// judged by what it is, as a call of it is (extensions.go)
	case f.Definition == "" && f.Kind != "p" && f.Volatility != "v" && (f.Language == "c" || f.Language == "internal"):
		// taken at its marking: nothing to read, and only a superuser can create it
	case f.Definition == "":
		j.err = refuse(rulecode.UnreadableRoutine, nil, what+" is "+volatilityWord(f)+" and written in "+f.Language+", which sqlfence cannot read",
			"if it writes no protected table, list it under safe_functions: in the policy")
	default:
		j.err, j.calls, j.carried = judgeDefinition(p, what, f.Definition)
	}
	if extra := s.bound.callsOf(f.OID); j.err == nil && len(extra) > 0 {
		j.calls = append(append([]uint32(nil), j.calls...), extra...) // domains of its signature and variables
	}
	v, _ := s.judged.LoadOrStore(f.OID, j)
	return v.(*funcJudgment)
}

// volatilityWord is a routine's marking for messages.
func volatilityWord(f *pgcatalog.Function) string {
	switch {
	case f.Volatility == "i":
		return "IMMUTABLE"
	case f.Volatility == "s":
		return "STABLE"
	}
	return "VOLATILE"
}

// bodyJudgment is set on the copy of the policy that judges a routine body read from
// the catalog: calls of user routines in it are listed, not judged (verdict follows
// them).
type bodyJudgment struct {
	calls   []uint32
	carried carrySet // the protected relations the body writes, when the guard carries the epoch
}

// judgeDefinition judges a routine from its CREATE statement (pg_get_functiondef).
func judgeDefinition(p *Policy, what, def string) (*Error, []uint32, []carried) {
	q := *p
	q.judging = &bodyJudgment{}
	tree, e := parseBounded(def)
	if e != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetCreateFunctionStmt() == nil {
		return refuse(rulecode.UnreadableRoutine, nil, what+" cannot be read", "if it writes no protected table, list it under safe_functions: in the policy"), nil, nil
	}
	e = admitRoutine(&q, tree.Stmts[0].Stmt.GetCreateFunctionStmt())
	return e, q.judging.calls, q.judging.carried.list
}

// collect lists the user routines a call may reach, for the body being judged.
func (s *catalogSnapshot) collect(j *bodyJudgment, schema, name string) {
	for _, f := range s.candidates(schema, name) {
		j.calls = append(j.calls, f.OID)
	}
}

// judgeUserCall judges a call of schema.name against the user routines it may reach.
// found reports whether there is any.
func (p *Policy) judgeUserCall(schema, name, shown, how string) (e *Error, found bool) {
	s := p.catalog
	cands := s.candidates(schema, name)
	if len(cands) == 0 {
		return nil, false
	}
	if p.judging != nil {
		s.collect(p.judging, schema, name)
		return nil, true
	}
	for _, f := range cands {
		err, list := s.verdict(p, f.OID)
		if err == nil && list != nil {
			err = p.carryOrRefuse(list, how+" of "+shown)
		}
		if err != nil {
			e := *err
			e.Reason = how + " of " + shown + ": " + err.Reason
			return &e, true
		}
	}
	return nil, true
}

// builtinVolatility is the volatility of the built-in name: the embedded list's and,
// with a catalog snapshot, the server's, whichever is more volatile.
func (p *Policy) builtinVolatility(name string) (pgfunc.Volatility, bool) {
	v, ok := pgfunc.Builtin(name)
	if p.catalog != nil {
		if sv, sok := p.catalog.builtins[name]; sok && (!ok || sv > v) {
			v, ok = sv, true
		}
	}
	return v, ok
}

// judgeAttributeCall judges a name in column position against the user functions a
// call in attribute notation can reach (pgcatalog.AttributeCall): with anyArg those
// taking one argument, else those taking one a table's row can be passed as, where no
// column of the row's relation has the name. A function the catalog says nothing
// about is taken as reachable. p.catalog may be nil.
func (p *Policy) judgeAttributeCall(name, shown, how string, anyArg bool) *Error {
	s := p.catalog
	if s == nil {
		return nil
	}
	for _, f := range s.candidates("", name) {
		if a, ok := s.attribute[f.OID]; ok && !(anyArg && a.Value) && !(!anyArg && a.Row) {
			continue
		}
		if p.judging != nil {
			p.judging.calls = append(p.judging.calls, f.OID)
			continue
		}
		err, list := s.verdict(p, f.OID)
		if err == nil && list != nil {
			err = p.carryOrRefuse(list, how+" of "+shown)
		}
		if err != nil {
			e := *err
			e.Reason = how + " of " + shown + ": " + err.Reason
			return &e
		}
	}
	return nil
}
