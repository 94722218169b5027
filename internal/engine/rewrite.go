// The rewrite of UPDATE and DELETE, the dispatch over statement kinds, WITH and
// EXPLAIN ANALYZE. INSERT is in rewrite_insert.go, MERGE in rewrite_merge.go.

package engine

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
	"google.golang.org/protobuf/proto"
)

func unexpected(t *Table, what string) *Error {
	return refuse(rulecode.UnknownShape, t, "sqlfence does not understand the shape of this statement ("+what+")",
		"rewrite the statement in a plainer form, or report it to the sqlfence maintainers")
}

// stmt fences the protected writes of a statement occupying tokens [lo, hi). top says
// the statement's row count is the one the application sees.
func (r *rewriter) statement(n *pg.Node, lo, hi int, top bool) *Error {
	if n == nil || lo >= hi {
		return nil
	}
	switch s := n.Node.(type) {
	case *pg.Node_UpdateStmt:
		return r.update(s.UpdateStmt, lo, hi, top)
	case *pg.Node_DeleteStmt:
		return r.delete(s.DeleteStmt, lo, hi, top)
	case *pg.Node_InsertStmt:
		return r.insertStmt(s.InsertStmt, lo, hi, top)
	case *pg.Node_MergeStmt:
		return r.merge(s.MergeStmt, lo, hi, top)
	case *pg.Node_SelectStmt:
		_, err := r.withClause(s.SelectStmt.WithClause, lo, hi)
		return err
	case *pg.Node_ExplainStmt:
		if !pgtree.ExplainAnalyze(s.ExplainStmt) {
			return nil
		}
		i := lo + 1
		if i < hi && r.toks[i].tok == pg.Token_ASCII_40 && r.pair[i] > 0 {
			i = r.pair[i] + 1
		}
		for i < hi && slices.Contains([]pg.Token{pg.Token_ANALYZE, pg.Token_ANALYSE, pg.Token_VERBOSE}, r.toks[i].tok) {
			i++
		}
		return r.statement(s.ExplainStmt.Query, i, hi, false)
	}
	return nil
}

// with fences the data-modifying CTEs of a WITH clause at the start of [lo, hi) and
// returns the first token after the clause.
func (r *rewriter) withClause(w *pg.WithClause, lo, hi int) (int, *Error) {
	if w == nil {
		return lo, nil
	}
	after := lo
	for _, c := range w.Ctes {
		cte := c.GetCommonTableExpr()
		if cte == nil {
			return lo, unexpected(nil, "WITH entry")
		}
		i, _ := slices.BinarySearchFunc(r.toks, int(cte.Location), func(t token, p int) int { return t.start - p })
		if i >= hi || r.toks[i].start != int(cte.Location) {
			return lo, unexpected(nil, "WITH entry position")
		}
		as := r.find(i, hi, r.depth[i], pg.Token_AS)
		open := r.find(as, hi, r.depth[i], pg.Token_ASCII_40)
		if as < 0 || open < 0 || r.pair[open] < 0 {
			return lo, unexpected(nil, "WITH entry body")
		}
		if err := r.statement(cte.Ctequery, open+1, r.pair[open], false); err != nil {
			return lo, err
		}
		after = r.pair[open] + 1
	}
	return after, nil
}

// target resolves a written relation against the policy.
func (r *rewriter) target(rv *pg.RangeVar) (*Table, *Error) {
	if rv == nil {
		return nil, nil
	}
	t, ambiguous := r.policy.Match(rv.Schemaname, rv.Relname)
	if t != nil && t.unfenceable != "" {
		fix := t.unfenceableFix
		if fix == "" {
			fix = "write the base table, or add the epoch column to the view's select list"
		}
		return t, refuse(rulecode.NoEpochColumn, t, t.unfenceable, fix)
	}
	if ambiguous {
		return t, refuse(rulecode.AmbiguousName, t, "the unqualified name "+sqlident.Quote(rv.Relname)+" matches several policy entries with different epoch columns or modes",
			"qualify the table with its schema")
	}
	return t, nil
}

func qualifier(rv *pg.RangeVar) string {
	if rv.Alias != nil && rv.Alias.Aliasname != "" {
		return rv.Alias.Aliasname
	}
	return rv.Relname
}

// assignsEpoch refuses a statement that sets the epoch column itself: the fence owns it.
func assignsEpoch(t *Table, targets []*pg.Node) *Error {
	for _, n := range targets {
		if rt := n.GetResTarget(); rt != nil && rt.Name == t.EpochColumn {
			return refuse(rulecode.AssignsEpoch, t, "the statement assigns the epoch column "+sqlident.Quote(t.EpochColumn)+" itself",
				"remove the assignment; sqlfence sets it from the context's epoch (sqlfence.WithEpoch). "+
					"From an ORM model with the epoch field: with GORM register the plugin sqlfencegorm.New(policy) "+
					"(github.com/sqlfence/sqlfence/contrib/gorm) or tag the field `gorm:\"->\"`; with bun tag it `bun:\",scanonly\"`")
		}
	}
	return nil
}

func (r *rewriter) update(u *pg.UpdateStmt, lo, hi int, top bool) *Error {
	after, err := r.withClause(u.WithClause, lo, hi)
	if err != nil {
		return err
	}
	t, err := r.target(u.Relation)
	if t == nil || err != nil {
		return err
	}
	if err := assignsEpoch(t, u.TargetList); err != nil {
		return err
	}
	if _, ok := u.WhereClause.GetNode().(*pg.Node_CurrentOfExpr); ok {
		return refuse(rulecode.CurrentOf, t, "UPDATE … WHERE CURRENT OF cannot carry the fence predicate",
			"update by key (WHERE id = $1) instead of through a cursor")
	}
	base := r.depth[lo]
	kw := r.find(after, hi, base, pg.Token_UPDATE)
	set := r.find(kw+1, hi, base, pg.Token_SET)
	if kw < 0 || set < 0 {
		return unexpected(t, "UPDATE without SET")
	}
	setEnd := r.clauseEnd(set+1, hi, base, pg.Token_FROM, pg.Token_WHERE, pg.Token_RETURNING)
	qual := qualifier(u.Relation)
	r.insertAfter(setEnd-1, ", "+sqlident.Quote(t.EpochColumn)+" = "+r.stampText())
	u.TargetList = append(u.TargetList, r.setTarget(t))
	hasWhere := u.WhereClause != nil
	whereEnd, err := r.fenceWhere(t, qual, &u.WhereClause, setEnd, hi, base)
	if err != nil {
		return err
	}
	if top {
		from := ""
		if setEnd < hi && r.toks[setEnd].tok == pg.Token_FROM {
			from = r.text(setEnd+1, r.clauseEnd(setEnd+1, hi, base, pg.Token_WHERE, pg.Token_RETURNING))
		}
		r.top = r.classifier(t, qual, false, u.WithClause, lo, after, r.text(kw+1, set), from, hasWhere, whereEnd)
		r.top.setReturning(u.ReturningList)
	}
	r.done[u] = true
	r.tables = append(r.tables, t)
	return nil
}

func (r *rewriter) delete(d *pg.DeleteStmt, lo, hi int, top bool) *Error {
	after, err := r.withClause(d.WithClause, lo, hi)
	if err != nil {
		return err
	}
	t, err := r.target(d.Relation)
	if t == nil || err != nil {
		return err
	}
	if _, ok := d.WhereClause.GetNode().(*pg.Node_CurrentOfExpr); ok {
		return refuse(rulecode.CurrentOf, t, "DELETE … WHERE CURRENT OF cannot carry the fence predicate",
			"delete by key (WHERE id = $1) instead of through a cursor")
	}
	base := r.depth[lo]
	kw := r.find(after, hi, base, pg.Token_DELETE_P)
	from := r.find(kw+1, hi, base, pg.Token_FROM)
	if kw < 0 || from < 0 {
		return unexpected(t, "DELETE without FROM")
	}
	targetEnd := r.clauseEnd(from+1, hi, base, pg.Token_USING, pg.Token_WHERE, pg.Token_RETURNING)
	qual := qualifier(d.Relation)
	hasWhere := d.WhereClause != nil
	whereEnd, err := r.fenceWhere(t, qual, &d.WhereClause, targetEnd, hi, base)
	if err != nil {
		return err
	}
	if top {
		using := ""
		if targetEnd < hi && r.toks[targetEnd].tok == pg.Token_USING {
			using = r.text(targetEnd+1, r.clauseEnd(targetEnd+1, hi, base, pg.Token_WHERE, pg.Token_RETURNING))
		}
		r.top = r.classifier(t, qual, true, d.WithClause, lo, after, r.text(from+1, targetEnd), using, hasWhere, whereEnd)
		r.top.setReturning(d.ReturningList)
	}
	r.done[d] = true
	r.tables = append(r.tables, t)
	return nil
}

// fenceWhere adds the fence to the WHERE clause that follows token from (or creates
// one before RETURNING), wrapping the original condition in parentheses so that an OR
// in it cannot escape the fence. It returns the token after the condition.
func (r *rewriter) fenceWhere(t *Table, qual string, where **pg.Node, from, hi, base int) (int, *Error) {
	fence := r.fenceText(t, qual)
	if *where == nil {
		ret := r.clauseEnd(from, hi, base, pg.Token_RETURNING)
		r.insertAfter(ret-1, " WHERE "+fence)
		*where = r.fenceNode(t, qual)
		return ret, nil
	}
	w := r.find(from, hi, base, pg.Token_WHERE)
	if w < 0 || w+1 >= hi {
		return 0, unexpected(t, "WHERE clause")
	}
	end := r.clauseEnd(w+1, hi, base, pg.Token_RETURNING)
	r.insertBefore(w+1, "(")
	r.insertAfter(end-1, ") AND "+fence)
	*where = andNode(*where, r.fenceNode(t, qual))
	return end, nil
}

type rewriter struct {
	sql    string
	policy *Policy
	toks   []token
	depth  []int // nesting depth before each token: (), [] and CASE … END
	pair   []int // index of the matching closer for an opener, else -1
	param  int32
	edits  []edit
	done   map[proto.Message]bool // protected writes the rewrite fenced
	tables []*Table
	top    *Classifier
	check  *ClaimCheck // the claim the writes are checked against, or nil
}
