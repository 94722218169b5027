// The rewrite of MERGE: every WHEN MATCHED clause gets the fence, its UPDATE SET and
// INSERT get the epoch.

package engine

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// merge fences a MERGE on a protected table: the clauses are found among the
// tokens, each WHEN clause is fenced (mergeWhen), and the top-level MERGE leaves the
// query that explains a 0-row result (mergeZeroRows).
func (r *rewriter) merge(m *pg.MergeStmt, lo, hi int, top bool) *Error {
	after, err := r.withClause(m.WithClause, lo, hi)
	if err != nil {
		return err
	}
	t, err := r.target(m.Relation)
	if t == nil || err != nil {
		return err
	}
	base := r.depth[lo]
	using := r.find(after, hi, base, pg.Token_USING)
	on := r.find(using+1, hi, base, pg.Token_ON)
	if using < 0 || on < 0 {
		return unexpected(t, "MERGE without USING … ON")
	}
	end := r.clauseEnd(on+1, hi, base, pg.Token_RETURNING)
	var whens []int
	for i := on + 1; i < end; i++ {
		if r.depth[i] == base && r.toks[i].tok == pg.Token_WHEN {
			whens = append(whens, i)
		}
	}
	if len(whens) != len(m.MergeWhenClauses) {
		return unexpected(t, "MERGE WHEN clauses")
	}
	whens = append(whens, end)
	qual := qualifier(m.Relation)
	for k, n := range m.MergeWhenClauses {
		if err := r.mergeWhen(t, qual, n.GetMergeWhenClause(), whens[k], whens[k+1], base); err != nil {
			return err
		}
	}
	if top {
		r.mergeZeroRows(m, t, qual, lo, hi, after, using, on, whens[0], base)
	}
	r.done[m] = true
	r.tables = append(r.tables, t)
	return nil
}

// mergeWhen fences one WHEN clause, whose tokens run from w to next: a MATCHED
// clause gets the predicate (after its own AND condition), its UPDATE SET and its
// INSERT the epoch.
func (r *rewriter) mergeWhen(t *Table, qual string, c *pg.MergeWhenClause, w, next, base int) *Error {
	then := r.find(w, next, base, pg.Token_THEN)
	if c == nil || then < 0 {
		return unexpected(t, "MERGE WHEN clause")
	}
	if err := assignsEpoch(t, c.TargetList); err != nil {
		return err
	}
	if c.MatchKind != pg.MergeMatchKind_MERGE_WHEN_NOT_MATCHED_BY_TARGET {
		fence := r.fenceText(t, qual)
		if c.Condition != nil {
			and := r.find(w, then, base, pg.Token_AND)
			if and < 0 {
				return unexpected(t, "MERGE WHEN condition")
			}
			r.insertBefore(and+1, "(")
			r.insertAfter(then-1, ") AND "+fence)
			c.Condition = andNode(c.Condition, r.fenceNode(t, qual))
		} else {
			r.insertAfter(then-1, " AND "+fence)
			c.Condition = r.fenceNode(t, qual)
		}
	}
	col := sqlident.Quote(t.EpochColumn)
	switch c.CommandType {
	case pg.CmdType_CMD_UPDATE:
		r.insertAfter(next-1, ", "+col+" = "+r.stampText())
		c.TargetList = append(c.TargetList, r.setTarget(t))
	case pg.CmdType_CMD_INSERT:
		if err := r.mergeInsert(t, c, col, then, next, base); err != nil {
			return err
		}
		c.TargetList = append(c.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn}}})
		c.Values = append(c.Values, r.stampNode())
	}
	return nil
}

// mergeInsert adds the epoch column and its stamp to a WHEN NOT MATCHED … INSERT.
func (r *rewriter) mergeInsert(t *Table, c *pg.MergeWhenClause, col string, then, next, base int) *Error {
	ins := r.find(then, next, base, pg.Token_INSERT)
	switch {
	case len(c.TargetList) == 0 && len(c.Values) == 0:
		def := r.find(ins, next, base, pg.Token_DEFAULT)
		if def < 0 || def+1 >= next {
			return unexpected(t, "MERGE INSERT DEFAULT VALUES")
		}
		r.defaultValues(def, col)
	case len(c.TargetList) == 0:
		return refuse(rulecode.NoColumnList, t, "MERGE … INSERT into a protected table without a column list",
			"name the columns: WHEN NOT MATCHED THEN INSERT (a, b) VALUES (…)")
	default:
		open := r.find(ins, next, base, pg.Token_ASCII_40)
		values := r.find(open+1, next, base, pg.Token_VALUES)
		if open < 0 || r.pair[open] < 0 || values < 0 || values+1 >= next || r.pair[values+1] < 0 {
			return unexpected(t, "MERGE INSERT")
		}
		r.insertAfter(r.pair[open]-1, ", "+col)
		r.insertAfter(r.pair[values+1]-1, ", "+r.stampText())
	}
	return nil
}

// mergeZeroRows leaves the query that explains a top-level MERGE that wrote nothing:
// the target joined with the source on the MERGE's own condition.
func (r *rewriter) mergeZeroRows(m *pg.MergeStmt, t *Table, qual string, lo, hi, after, using, on, firstWhen, base int) {
	source := r.text(using+1, on)
	cond := r.text(on+1, firstWhen)
	var b strings.Builder
	if m.WithClause != nil {
		b.WriteString(r.text(lo, after) + " ")
	}
	qcol := sqlident.Quote(qual) + "." + sqlident.Quote(t.EpochColumn)
	fmt.Fprintf(&b, "SELECT %s FROM %s JOIN %s ON (%s)", classifierColumns(qcol, t, false),
		r.text(r.find(after, hi, base, pg.Token_INTO)+1, using), source, cond)
	if m.WithClause == nil || readOnlyWith(m.WithClause) {
		r.top = renumber(t, b.String())
		r.top.setReturning(m.ReturningList)
	}
}
