package check

import (
	"fmt"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// handFenced checks the write against the hand-fencing rule and returns what is
// missing; nil means it is fenced.
func (w *write) handFenced() []string {
	t := w.table
	col := sqlident.Quote(t.EpochColumn)
	if w.ambiguous {
		return []string{"the unqualified name matches several policy entries with different epoch columns or modes; qualify it with its schema"}
	}
	switch s := w.node.(type) {
	case *pg.UpdateStmt:
		return w.setAndWhere(s.TargetList, s.WhereClause, "WHERE")
	case *pg.DeleteStmt:
		if _, ok := s.WhereClause.GetNode().(*pg.Node_CurrentOfExpr); ok {
			return []string{"WHERE CURRENT OF cannot carry a fence"}
		}
		if w.compares(s.WhereClause, nil) {
			return nil
		}
		return w.missingCompare("WHERE")
	case *pg.InsertStmt:
		var out []string
		if len(s.Cols) == 0 {
			out = append(out, "it has no column list")
		} else if !assigns(s.Cols, t.EpochColumn) {
			out = append(out, "its column list does not include "+col)
		}
		if oc := s.OnConflictClause; oc != nil && oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
			w.upsert = true
			out = append(out, w.setAndWhere(oc.TargetList, oc.WhereClause, "DO UPDATE … WHERE")...)
		}
		return out
	case *pg.MergeStmt:
		var out []string
		for _, n := range s.MergeWhenClauses {
			c := n.GetMergeWhenClause()
			if c == nil {
				continue
			}
			switch {
			case c.MatchKind == pg.MergeMatchKind_MERGE_WHEN_NOT_MATCHED_BY_TARGET && c.CommandType == pg.CmdType_CMD_INSERT:
				if !assigns(c.TargetList, t.EpochColumn) {
					out = append(out, "WHEN NOT MATCHED THEN INSERT does not name "+col)
				}
			case c.CommandType == pg.CmdType_CMD_UPDATE:
				out = append(out, w.setAndWhere(c.TargetList, c.Condition, "WHEN MATCHED AND")...)
			case c.CommandType == pg.CmdType_CMD_DELETE:
				if !w.compares(c.Condition, nil) {
					out = append(out, w.missingCompare("WHEN MATCHED AND … THEN DELETE")...)
				}
			}
		}
		return out
	}
	return []string{"sqlfence check does not understand this write"}
}

// setAndWhere checks an assignment list and condition for the UPDATE form of the
// fence: the epoch column set to E, and compared with the same E.
func (w *write) setAndWhere(targets []*pg.Node, cond *pg.Node, where string) []string {
	col := sqlident.Quote(w.table.EpochColumn)
	var v *pg.Node
	for _, n := range targets {
		if rt := n.GetResTarget(); rt != nil && rt.Name == w.table.EpochColumn && len(rt.Indirection) == 0 {
			v = rt.Val
		}
	}
	switch {
	case v == nil:
		out := []string{"SET does not assign " + col}
		if !w.compares(cond, nil) {
			out = append(out, w.missingCompare(where)...)
		}
		return out
	case !w.isEpoch(v):
		return []string{"the value SET assigns to " + col + " is not an epoch: use an integer, a parameter, a scalar subquery or another table's column"}
	case !w.compares(cond, v):
		return w.missingCompare(where)
	}
	return nil
}

func (w *write) missingCompare(where string) []string {
	col := sqlident.Quote(w.table.EpochColumn)
	if w.weak {
		return []string{fmt.Sprintf("%s compares %s with <=, which lets an execution write a row twice, but %s is in strict mode: use <", where, col, w.table.QualifiedName)}
	}
	return []string{fmt.Sprintf("%s has no top-level `AND %s %s <epoch>`", where, col, w.table.Mode.Operator())}
}

// assigns reports whether a column list (INSERT) or SET list names col.
func assigns(targets []*pg.Node, col string) bool {
	for _, n := range targets {
		if rt := n.GetResTarget(); rt != nil && rt.Name == col {
			return true
		}
	}
	return false
}

// compares reports whether cond has, as a top-level AND condition, the fence
// comparison of the epoch column with v (with any epoch when v is nil).
func (w *write) compares(cond *pg.Node, v *pg.Node) bool {
	for _, c := range conjuncts(cond) {
		e := c.GetAExpr()
		if e == nil || e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(e.Name) == 0 {
			continue
		}
		op := e.Name[len(e.Name)-1].GetString_().GetSval()
		var other *pg.Node
		switch {
		case (op == "<" || op == "<=") && w.isEpochColumn(e.Lexpr):
			other = e.Rexpr
		case (op == ">" || op == ">=") && w.isEpochColumn(e.Rexpr):
			other = e.Lexpr
		default:
			continue
		}
		if !(v == nil && w.isEpoch(other) || v != nil && sameExpr(other, v)) {
			continue
		}
		if strict := op == "<" || op == ">"; !strict && w.table.Mode != sqlfence.ModeRepeatable {
			w.weak = true // <= lets an execution write a row twice; strict tables need <
			continue
		}
		return true
	}
	return false
}

func conjuncts(n *pg.Node) []*pg.Node {
	if n == nil {
		return nil
	}
	if b := n.GetBoolExpr(); b != nil && b.Boolop == pg.BoolExprType_AND_EXPR {
		var out []*pg.Node
		for _, a := range b.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []*pg.Node{n}
}

// isEpochColumn reports whether n is the target's epoch column: col, qual.col or
// schema.table.col.
func (w *write) isEpochColumn(n *pg.Node) bool {
	f := columnRef(n)
	switch len(f) {
	case 1:
		return f[0] == w.table.EpochColumn
	case 2:
		return f[0] == w.qual && f[1] == w.table.EpochColumn
	case 3:
		return w.qual == w.rv.Relname && f[1] == w.rv.Relname && f[2] == w.table.EpochColumn &&
			(w.rv.Schemaname == "" || f[0] == w.rv.Schemaname)
	}
	return false
}

// isEpoch reports whether n can be an epoch value: an integer, a parameter, a scalar
// subquery, or a column of another relation in the statement (j.lease_epoch,
// excluded.writer_epoch), possibly cast.
func (w *write) isEpoch(n *pg.Node) bool {
	for n.GetTypeCast() != nil {
		n = n.GetTypeCast().Arg
	}
	switch v := n.GetNode().(type) {
	case *pg.Node_AConst:
		return v.AConst.GetIval() != nil || v.AConst.GetFval() != nil
	case *pg.Node_ParamRef:
		return true
	case *pg.Node_SubLink:
		return v.SubLink.SubLinkType == pg.SubLinkType_EXPR_SUBLINK
	case *pg.Node_ColumnRef:
		f := columnRef(n)
		if len(f) < 2 {
			return false // unqualified: it may be the target's own column
		}
		qual := f[len(f)-2]
		return qual != w.qual && !(len(f) == 3 && qual == w.rv.Relname)
	}
	return false
}

func columnRef(n *pg.Node) []string {
	c := n.GetColumnRef()
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.Fields))
	for _, f := range c.Fields {
		s := f.GetString_()
		if s == nil {
			return nil // a * or an indirection
		}
		out = append(out, s.Sval)
	}
	return out
}

// sameExpr compares two expressions, ignoring where they are in the text.
func sameExpr(a, b *pg.Node) bool {
	return pgtree.Equal(a.ProtoReflect(), b.ProtoReflect())
}
