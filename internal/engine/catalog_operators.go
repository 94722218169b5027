// Operators as calls: with resolve: catalog, an operator the statement names — or
// that its syntax implies (BETWEEN, IN, CASE x WHEN, JOIN USING) — is judged as the
// function of every user operator of that name, since search_path decides which runs.

package engine

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgfunc"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// operatorNames are the operators PostgreSQL looks up by name for n, with the schema
// the statement qualified them with (OPERATOR(s.op)), or nil when n names none.
func operatorNames(n any) (schema string, ops []string) {
	var name []*pg.Node
	switch n := n.(type) {
	case *pg.A_Expr:
		switch n.Kind {
		case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN,
			pg.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
			return "", []string{">=", "<=", ">", "<"}
		}
		name = n.Name
	case *pg.SubLink:
		if n.SubLinkType == pg.SubLinkType_ANY_SUBLINK && len(n.OperName) == 0 {
			return "", []string{"="} // x IN (SELECT …)
		}
		name = n.OperName
	case *pg.SortBy:
		name = n.UseOp
	case *pg.CaseExpr:
		if n.Arg != nil {
			return "", []string{"="} // CASE x WHEN y: x = y
		}
	case *pg.JoinExpr:
		if n.IsNatural || len(n.UsingClause) > 0 {
			return "", []string{"="}
		}
	}
	if len(name) == 0 {
		return "", nil
	}
	schema, op := pgtree.FuncName(name)
	return schema, []string{op}
}

// judgeOperators judges the operators n names or implies against the catalog's user
// operators; without the catalog they are not seen (docs/policy.md,
// "What sqlfence cannot see").
func judgeOperators(p *Policy, n any) *Error {
	s := p.catalog
	if s == nil || len(s.operators) == 0 {
		return nil
	}
	schema, ops := operatorNames(n)
	for _, op := range ops {
		for _, o := range s.operators[op] {
			if schema != "" && o.Schema != schema {
				continue
			}
			how := "the operator OPERATOR(" + sqlident.Quote(o.Schema) + "." + o.Name + ") (it calls " +
				QualifiedName{Schema: o.FuncSchema, Name: o.FuncName}.String() + ")"
			if o.FuncSchema == "pg_catalog" {
				if v, ok := p.builtinVolatility(o.FuncName); ok && v == pgfunc.Volatile && !pgfunc.HarmlessVolatile(o.FuncName) {
					return refuse(rulecode.VolatileBuiltin, nil, how+": a volatile built-in not on sqlfence's list of built-ins that cannot write tables",
						"qualify the operator as OPERATOR(pg_catalog."+op+"), or drop the user operator")
				}
				continue
			}
			if p.judging != nil {
				p.judging.calls = append(p.judging.calls, o.Function)
				continue
			}
			err, list := s.verdict(p, o.Function)
			if err == nil && list != nil {
				err = p.carryOrRefuse(list, how)
			}
			if err != nil {
				e := *err
				e.Reason = how + ": " + err.Reason
				if e.Fix == "" {
					e.Fix = "qualify the operator as OPERATOR(pg_catalog." + op + "), or drop the user operator"
				}
				return &e
			}
		}
	}
	return nil
}
