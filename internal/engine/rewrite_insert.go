// The rewrite of INSERT: the epoch column in the column list, the epoch in every row
// and select list, and ON CONFLICT DO UPDATE fenced as an UPDATE.

package engine

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

func (r *rewriter) insertStmt(s *pg.InsertStmt, lo, hi int, top bool) *Error {
	after, err := r.withClause(s.WithClause, lo, hi)
	if err != nil {
		return err
	}
	t, err := r.target(s.Relation)
	if t == nil || err != nil {
		return err
	}
	if err := assignsEpoch(t, s.Cols); err != nil {
		return err
	}
	base := r.depth[lo]
	into := r.find(after, hi, base, pg.Token_INTO)
	if into < 0 {
		return unexpected(t, "INSERT without INTO")
	}
	col := sqlident.Quote(t.EpochColumn)
	cols := insertColumns(s.Cols) // the application's own column list, before the epoch is added
	var body int                  // first token of the rows
	open := -1                    // the column list's "("
	switch {
	case s.SelectStmt == nil: // DEFAULT VALUES
		def := r.find(into+1, hi, base, pg.Token_DEFAULT)
		if def < 0 || def+1 >= hi || r.toks[def+1].tok != pg.Token_VALUES {
			return unexpected(t, "INSERT without rows")
		}
		r.defaultValues(def, col)
		s.Cols = []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn}}}}
		s.SelectStmt = &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
			ValuesLists: []*pg.Node{pg.MakeListNode([]*pg.Node{r.stampNode()})},
			LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg.SetOperation_SETOP_NONE,
		}}}
		body = def + 2
	case len(s.Cols) == 0:
		return refuse(rulecode.NoColumnList, t, "INSERT into a protected table without a column list",
			"name the columns: INSERT INTO t (a, b) VALUES (…); sqlfence adds "+col+" to the list")
	default:
		open = r.find(into+1, hi, base, pg.Token_ASCII_40)
		if open < 0 || r.pair[open] < 0 {
			return unexpected(t, "INSERT column list")
		}
		close := r.pair[open]
		r.insertAfter(close-1, ", "+col)
		s.Cols = append(s.Cols, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn}}})
		body = close + 1
		if s.Override != pg.OverridingKind_OVERRIDING_NOT_SET {
			body = r.find(body, hi, base, pg.Token_VALUE_P) + 1
		}
		end := hi
		if oc := r.onConflict(body, hi, base); oc >= 0 {
			end = oc
		} else {
			end = r.clauseEnd(body, hi, base, pg.Token_RETURNING)
		}
		if err := r.fenceRows(t, s.SelectStmt.GetSelectStmt(), body, end); err != nil {
			return err
		}
	}
	if oc := s.OnConflictClause; oc != nil && oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
		if err := assignsEpoch(t, oc.TargetList); err != nil {
			return err
		}
		on := r.onConflict(body, hi, base)
		set := r.find(on+1, hi, base, pg.Token_SET)
		if on < 0 || set < 0 {
			return unexpected(t, "ON CONFLICT DO UPDATE")
		}
		setEnd := r.clauseEnd(set+1, hi, base, pg.Token_WHERE, pg.Token_RETURNING)
		r.insertAfter(setEnd-1, ", "+col+" = "+r.stampText())
		oc.TargetList = append(oc.TargetList, r.setTarget(t))
		hadWhere := oc.WhereClause != nil
		readsExcluded := hadWhere && refersTo(oc.WhereClause, "excluded")
		whereEnd, err := r.fenceWhere(t, qualifier(s.Relation), &oc.WhereClause, setEnd, hi, base)
		if err != nil {
			return err
		}
		// An upsert of literal rows is explained by the rows its conflict target
		// matches. A DO UPDATE … WHERE that reads excluded.* cannot be evaluated
		// without the rows, so its 0-row result stays unexplained.
		if top && !readsExcluded && len(s.SelectStmt.GetSelectStmt().GetValuesLists()) > 0 {
			r.top = r.conflictClassifier(t, s, cols, into, open, body, hi, base, hadWhere, whereEnd)
		}
	}
	r.done[s] = true
	r.tables = append(r.tables, t)
	return nil
}

// defaultValues turns DEFAULT VALUES (tokens def, def+1) into (col) VALUES ($e),
// replacing only the DEFAULT keyword so that anything between the two survives.
func (r *rewriter) defaultValues(def int, col string) {
	r.edits = append(r.edits, edit{tok: def, replace: true, text: "(" + col + ")"})
	r.insertAfter(def+1, " ("+r.stampText()+")")
}

func (r *rewriter) onConflict(from, hi, base int) int {
	for i := from; i+1 < hi; i++ {
		if r.depth[i] == base && r.toks[i].tok == pg.Token_ON && r.toks[i+1].tok == pg.Token_CONFLICT {
			return i
		}
	}
	return -1
}

// fenceRows adds the epoch to every row an INSERT writes: each VALUES row, or the
// select list of every arm of a query.
func (r *rewriter) fenceRows(t *Table, sel *pg.SelectStmt, lo, hi int) *Error {
	if sel == nil || lo >= hi {
		return unexpected(t, "INSERT rows")
	}
	for r.toks[lo].tok == pg.Token_ASCII_40 && r.pair[lo] == hi-1 {
		lo, hi = lo+1, hi-1
	}
	base := r.depth[lo]
	after, err := r.withClause(sel.WithClause, lo, hi)
	if err != nil {
		return err
	}
	switch {
	case len(sel.ValuesLists) > 0:
		v := r.find(after, hi, base, pg.Token_VALUES)
		if v < 0 {
			return unexpected(t, "VALUES")
		}
		i := v + 1
		for _, row := range sel.ValuesLists {
			list := row.GetList()
			if i >= hi || r.toks[i].tok != pg.Token_ASCII_40 || r.pair[i] < 0 || list == nil {
				return unexpected(t, "VALUES row")
			}
			r.insertAfter(r.pair[i]-1, ", "+r.stampText())
			list.Items = append(list.Items, r.stampNode())
			i = r.pair[i] + 1
			if i < hi && r.toks[i].tok == pg.Token_ASCII_44 {
				i++
			}
		}
		return nil
	case sel.Op != pg.SetOperation_SETOP_NONE:
		split := -1
		for _, ops := range [][]pg.Token{{pg.Token_UNION, pg.Token_EXCEPT}, {pg.Token_INTERSECT}} {
			for i := after; i < hi; i++ {
				if r.depth[i] == base && slices.Contains(ops, r.toks[i].tok) {
					split = i
				}
			}
			if split >= 0 {
				break
			}
		}
		if split < 0 {
			return unexpected(t, "set operation")
		}
		right := split + 1
		if right < hi && (r.toks[right].tok == pg.Token_ALL || r.toks[right].tok == pg.Token_DISTINCT) {
			right++
		}
		end := r.clauseEnd(right, hi, base, pg.Token_ORDER, pg.Token_LIMIT, pg.Token_OFFSET, pg.Token_FETCH, pg.Token_FOR)
		if err := r.fenceRows(t, sel.Larg, after, split); err != nil {
			return err
		}
		return r.fenceRows(t, sel.Rarg, right, end)
	default:
		s := r.find(after, hi, base, pg.Token_SELECT)
		if s < 0 || len(sel.TargetList) == 0 {
			return unexpected(t, "INSERT … SELECT without a select list")
		}
		end := r.clauseEnd(s+1, hi, base, pg.Token_FROM, pg.Token_INTO, pg.Token_WHERE, pg.Token_GROUP_P,
			pg.Token_HAVING, pg.Token_WINDOW, pg.Token_ORDER, pg.Token_LIMIT, pg.Token_OFFSET, pg.Token_FETCH,
			pg.Token_FOR, pg.Token_UNION, pg.Token_INTERSECT, pg.Token_EXCEPT)
		r.insertAfter(end-1, ", "+r.stampText())
		sel.TargetList = append(sel.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: r.stampNode()}}})
		return nil
	}
}
