// The fence: the text the rewrite inserts — the epoch parameter, the stamp (under a
// claim, the claim check), the predicate — and the nodes the parser builds from that
// text, side by side, so that the editor's insertions and verify's expected tree
// cannot drift apart.

package engine

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

func (r *rewriter) epochText() string { return "$" + strconv.Itoa(int(r.param)) + "::bigint" }

// stampText is the epoch value a write stamps on the rows it writes: the epoch, or
// under a claim the claim check, which is NULL once the claim is superseded.
func (r *rewriter) stampText() string {
	if r.check != nil {
		return r.check.checkText(r.param, r.param+1)
	}
	return r.epochText()
}

// fenceText is the predicate that keeps a write off rows it may not write: the row's
// epoch is older than the stamp (NULL, so no row, under a superseded claim); under a
// claim on a `stale: claim` table, only that the claim is current.
func (r *rewriter) fenceText(t *Table, qual string) string {
	if r.check != nil && t.Stale == StaleClaim {
		return r.stampText() + " IS NOT NULL"
	}
	return sqlident.Quote(qual) + "." + sqlident.Quote(t.EpochColumn) + " " + t.Mode.qualifiedOperator() + " " + r.stampText()
}

func epochNode(param int32) *pg.Node {
	return &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{
		Arg: &pg.Node{Node: &pg.Node_ParamRef{ParamRef: &pg.ParamRef{Number: param}}},
		TypeName: &pg.TypeName{
			Names:   []*pg.Node{pg.MakeStrNode("pg_catalog"), pg.MakeStrNode("int8")},
			Typemod: -1,
		},
	}}}
}

// stampNode is stampText as the parser builds it.
func (r *rewriter) stampNode() *pg.Node {
	if r.check != nil {
		return r.check.checkNode(r.param, r.param+1)
	}
	return epochNode(r.param)
}

// fenceNode is fenceText as the parser builds it.
func (r *rewriter) fenceNode(t *Table, qual string) *pg.Node {
	if r.check != nil && t.Stale == StaleClaim {
		return &pg.Node{Node: &pg.Node_NullTest{NullTest: &pg.NullTest{Arg: r.stampNode(), Nulltesttype: pg.NullTestType_IS_NOT_NULL}}}
	}
	return &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{
		Kind: pg.A_Expr_Kind_AEXPR_OP,
		// OPERATOR(pg_catalog.<) parses to the qualified name ["pg_catalog", "<"].
		Name:  []*pg.Node{pg.MakeStrNode("pg_catalog"), pg.MakeStrNode(t.Mode.Operator())},
		Lexpr: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(qual), pg.MakeStrNode(t.EpochColumn)}}}},
		Rexpr: r.stampNode(),
	}}}
}

func (r *rewriter) setTarget(t *Table) *pg.Node {
	return &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn, Val: r.stampNode()}}}
}

// andNode mirrors the grammar's makeAndExpr: `(p) AND f` flattens into p's argument
// list when p is itself an AND.
func andNode(p, f *pg.Node) *pg.Node {
	if b := p.GetBoolExpr(); b != nil && b.Boolop == pg.BoolExprType_AND_EXPR {
		b.Args = append(b.Args, f)
		return p
	}
	return &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: []*pg.Node{p, f}}}}
}

// claimAlias names the claim table inside the check, so that its columns can never
// resolve to the outer statement's.
const claimAlias = "sqlfence_claim"

func (cc *ClaimCheck) tableSQL() string {
	if cc.table.Schema == "" {
		return sqlident.Quote(cc.table.Name)
	}
	return sqlident.Quote(cc.table.Schema) + "." + sqlident.Quote(cc.table.Name)
}

// checkText is the claim check: the epoch while the claim is current, else NULL.
func (cc *ClaimCheck) checkText(epochParam, keyParam int32) string {
	e := "$" + strconv.Itoa(int(epochParam)) + "::bigint"
	return "(SELECT " + e + " FROM " + cc.tableSQL() + " " + claimAlias +
		" WHERE " + claimAlias + "." + sqlident.Quote(cc.key) + " " + CatalogOperator("=") + " $" + strconv.Itoa(int(keyParam)) +
		" AND " + claimAlias + "." + sqlident.Quote(cc.epochCo) + " " + CatalogOperator("=") + " " + e + " FOR KEY SHARE)"
}

// checkNode is checkText as the parser builds it.
func (cc *ClaimCheck) checkNode(epochParam, keyParam int32) *pg.Node {
	col := func(name string) *pg.Node {
		return &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(claimAlias), pg.MakeStrNode(name)}}}}
	}
	eq := func(l, r *pg.Node) *pg.Node {
		return &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{Kind: pg.A_Expr_Kind_AEXPR_OP,
			Name: []*pg.Node{pg.MakeStrNode("pg_catalog"), pg.MakeStrNode("=")}, Lexpr: l, Rexpr: r}}}
	}
	sel := &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: epochNode(epochParam)}}}},
		FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{
			Schemaname: cc.table.Schema, Relname: cc.table.Name, Inh: true, Relpersistence: "p",
			Alias: &pg.Alias{Aliasname: claimAlias},
		}}}},
		WhereClause: &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: []*pg.Node{
			eq(col(cc.key), &pg.Node{Node: &pg.Node_ParamRef{ParamRef: &pg.ParamRef{Number: keyParam}}}),
			eq(col(cc.epochCo), epochNode(epochParam)),
		}}}},
		LockingClause: []*pg.Node{{Node: &pg.Node_LockingClause{LockingClause: &pg.LockingClause{
			Strength: pg.LockClauseStrength_LCS_FORKEYSHARE, WaitPolicy: pg.LockWaitPolicy_LockWaitBlock,
		}}}},
		LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg.SetOperation_SETOP_NONE,
	}
	return &pg.Node{Node: &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXPR_SUBLINK,
		Subselect: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}}}}
}
