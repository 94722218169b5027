// Decisions by shape: texts that differ only in literal values share one decision.
// An application that inlines its values (an ORM that renders them, hand-built SQL)
// sends a new text for every call; deciding each afresh costs a parse, a rewrite and
// a verifying re-parse. A text's shape is its token sequence with the values of its
// literals left out (their kinds kept); the first text of a shape is analysed in
// full, and its decision becomes a plan that the next texts of that shape take
// without parsing: the fence's edits anchored to token positions, applied to the new
// text's tokens.
//
// That is only sound where the decision cannot depend on a masked value, so a literal
// is masked only when the analysed tree proves it a plain value: a constant reached
// from a DML statement through expression positions alone (operands of operators,
// assigned values, VALUES rows, LIMIT). Everything else — a function's argument
// ('x'::regclass, nextval('s'), set_config('name', …)), a cast, a setting, an
// EXPLAIN option, a DO or routine body, COPY, a Unicode-escaped string — is kept: the
// plan holds its exact text and a text whose kept literals differ by a byte is
// analysed in full. Parameters ($n) are tokens like any other and never masked.
// Only passes and rewrites are planned; refusals quote the statement and are rare.

package engine

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/guardmark"
	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// shapeable reports whether a text may be decided by shape. The analysis refuses
// texts over MaxStatementBytes, text that is not UTF-8 (the scanner accepts bytes in
// a literal that the parser's tree cannot hold), and text that carries the guard's
// marker anywhere, a masked literal included, or a NUL byte (where the parser stops).
// All take the analysis.
func shapeable(sql string) bool {
	return len(sql) <= MaxStatementBytes && utf8.ValidString(sql) && strings.IndexByte(sql, 0) < 0 &&
		!strings.Contains(sql, guardmark.Forged)
}

// shapePlan is a decision in a form that applies to every text of one shape.
type shapePlan struct {
	act        Action
	pass       *Decision // for ActPass: the decision itself, which holds nothing of the text
	edits      []edit    // for ActRewrite: the fence, anchored to tokens
	marker     string    // for ActRewrite: the guard's marker the fenced text starts with
	epochParam int
	tables     []*Table
	classify   *Classifier // the analysed text's, for its kind only: see classifier.forShape
	kept       []keptLiteral
	keptText   string    // the kept literals' texts, one after another
	runs       []planRun // the analysed text's runs of list elements (shape_lists.go)
	runFirst   []int     // where each begins there
	// epochAt is where the fence's epoch tokens are in the edits' texts, for a plan
	// whose epoch is $1 (planLiteral); literal is, per literalKind, whether the literal
	// form was checked on a text of the plan: 0 not yet, 1 it held, 2 it did not.
	epochAt []editOffset
	literal [2]atomic.Int32
}

// editOffset is a byte offset in the text of edit edit.
type editOffset struct{ edit, off int }

// keptLiteral is a literal token whose exact text the decision may depend on.
type keptLiteral struct{ tok, from, to int }

// maskable reports the literal kinds whose value a shape can leave out. A
// Unicode-escaped string (U&'…') is not among them: the parser, not the scanner,
// decodes its escapes and rejects bad ones.
func maskable(k pg.Token) bool {
	switch k {
	case pg.Token_SCONST, pg.Token_ICONST, pg.Token_FCONST, pg.Token_BCONST, pg.Token_XCONST:
		return true
	}
	return false
}

// shapeOf returns a scanned text's tokens without comments, as the rewriter indexes
// them, and its shape key: every token's kind, whether it touches the token before
// it, and the exact text of every token but the maskable literals, of which only the
// first and last bytes' classes count.
//
// The fence's edits go in at token boundaries, and what they insert is lexed with
// the text around it: `SET note = 'x'WHERE …` is a valid text, but the fence's
// `$1::bigint` inserted after 'x' runs into WHERE and makes the type bigintwhere,
// eating the WHERE clause. The analysis verifies its output and refuses that; a plan
// does not parse, so a text takes it only where every boundary, and every literal's
// edges, lex with the edits as they did in the analysed text.
func shapeOf(sql string, scanned []pgtree.Token) ([]token, string, []listRun) {
	toks := make([]token, 0, len(scanned))
	for _, t := range scanned {
		if t.Kind != pg.Token_SQL_COMMENT && t.Kind != pg.Token_C_COMMENT {
			toks = append(toks, token{int(t.Start), int(t.End), t.Kind})
		}
	}
	// The runs of list elements are left out but for their kind and outer edges
	// (shape_lists.go); in a text whose parameters are numbered in order, so are the
	// parameters' numbers, which its tokens then fix.
	seq := seqParams(sql, toks)
	runs := listRuns(toks, seq)
	key := make([]byte, 0, len(sql)+len(toks)+1)
	key = append(key, "EQ"[b2i(seq)])
	next := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		glued := uint64(0)
		if i > 0 && toks[i-1].end == t.start {
			glued = 1
		}
		if next < len(runs) && runs[next].first == i {
			r := runs[next]
			next++
			last := toks[r.last()]
			key = binary.AppendUvarint(key, 1<<32|uint64(t.tok)<<1|glued)
			if maskable(t.tok) {
				key = append(key, edgeClass(sql[t.start]), edgeClass(sql[last.end-1]))
			}
			i = r.last()
			continue
		}
		key = binary.AppendUvarint(key, uint64(t.tok)<<1|glued)
		switch {
		case seq && t.tok == pg.Token_PARAM:
		case !maskable(t.tok):
			key = binary.AppendUvarint(key, uint64(t.end-t.start))
			key = append(key, sql[t.start:t.end]...)
		case t.end > t.start:
			key = append(key, edgeClass(sql[t.start]), edgeClass(sql[t.end-1]))
		}
	}
	return toks, string(key), runs
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// edgeClass is what a shape keeps of a masked literal's first or last byte: the byte
// itself, except that letters, digits and underscores, which continue a word the same
// way whichever they are, are one class.
func edgeClass(c byte) byte {
	if c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 {
		return 'a'
	}
	return c
}

// newShapePlan makes the plan for a text the analysis passed (edits nil) or rewrote
// into d. tree is the text's tree, toks its tokens.
func newShapePlan(sql string, toks []token, tree *pg.ParseResult, d *Decision, edits []edit) *shapePlan {
	p := &shapePlan{act: d.act, epochParam: d.epochParam, tables: d.tables, classify: d.zeroRows, edits: slices.Clone(edits)}
	if d.act == ActPass {
		p.pass = d
	} else {
		p.marker = d.sql[:strings.Index(d.sql, "*/ ")+3] // the marker the analysis wrote, with its catalog version
	}
	masked := make([]bool, len(toks))
	locs, inLists := valueConstants(tree)
	for _, loc := range locs {
		i, found := slices.BinarySearchFunc(toks, int(loc), func(t token, p int) int { return t.start - p })
		if found && maskable(toks[i].tok) {
			masked[i] = true
		}
	}
	runs := listRuns(toks, seqParams(sql, toks))
	p.runs = planRuns(sql, toks, runs, inLists, edits, d.epochParam)
	for _, r := range runs {
		p.runFirst = append(p.runFirst, r.first)
	}
	var b strings.Builder
	for i, t := range toks {
		if maskable(t.tok) && !masked[i] {
			from := b.Len()
			b.WriteString(sql[t.start:t.end])
			p.kept = append(p.kept, keptLiteral{i, from, b.Len()})
		}
	}
	p.keptText = b.String()
	p.epochAt = epochOffsets(edits, d.epochParam)
	return p
}

// derive returns the decision for sql, a text of the plan's shape with tokens toks
// and runs of list elements runs, or nil when a kept literal differs, or a run the
// plan does not collapse has another length, and the text needs an analysis of its
// own.
func (p *shapePlan) derive(sql string, toks []token, runs []listRun) *Decision {
	moved, params, ok := shiftRuns(sql, toks, p.runs, runs)
	if !ok {
		return nil
	}
	for _, k := range p.kept {
		i := shiftedToken(k.tok, p.runFirst, moved)
		if i >= len(toks) {
			return nil
		}
		if t := toks[i]; sql[t.start:t.end] != p.keptText[k.from:k.to] {
			return nil
		}
	}
	if p.act == ActPass {
		return p.pass
	}
	edits, epoch := p.edits, p.epochParam
	if params != 0 || slices.ContainsFunc(moved, func(m int) bool { return m != 0 }) {
		edits = slices.Clone(p.edits)
		epoch += params
		oldRef, newRef := epochRef(p.epochParam), epochRef(epoch)
		for i := range edits {
			edits[i].tok = shiftedToken(edits[i].tok, p.runFirst, moved)
			if params != 0 {
				edits[i].text = strings.ReplaceAll(edits[i].text, oldRef, newRef) // planRuns: every $ is oldRef
			}
		}
	}
	for _, e := range edits {
		if e.tok >= len(toks) {
			return nil
		}
	}
	var starts []int
	if epoch == 1 && len(p.epochAt) > 0 {
		starts = make([]int, len(edits))
	}
	d := &Decision{act: ActRewrite, sql: p.marker + applyEdits(sql, toks, edits, starts), epochParam: epoch,
		tables: p.tables, zeroRows: p.classify.forShape()}
	if starts != nil {
		d.fromPlan, d.epochAt = p, epochPositions(p.epochAt, starts, len(p.marker))
	}
	return d
}

// size is what the plan holds on to beyond its key, for the cache's byte bound.
func (p *shapePlan) size() int {
	n := 128 + 16*cap(p.epochAt) + len(p.marker) + 2*len(p.keptText) + 24*cap(p.kept) + 48*cap(p.edits) + 8*cap(p.tables) + 24*cap(p.runs) + 8*cap(p.runFirst)
	for _, e := range p.edits {
		n += len(e.text)
	}
	return n
}

// valueConstants returns the locations of the constants in tree that are plain
// values: those reached through expression positions of DML statements alone. A
// node type not handled below ends the walk, and so does every field not named (a
// function call's arguments, a cast, a subscript, ORDER BY and GROUP BY positions,
// DEFAULT, …). inLists maps the location of the first element of each IN list
// reached so whose elements are all constants or parameters to its length
// (shape_lists.go).
func valueConstants(tree *pg.ParseResult) (locs []int32, inLists map[int32]int) {
	var walk func(n *pg.Node)
	list := func(l []*pg.Node) {
		for _, n := range l {
			walk(n)
		}
	}
	walk = func(n *pg.Node) {
		switch x := n.GetNode().(type) {
		case *pg.Node_AConst:
			locs = append(locs, x.AConst.GetLocation())
		case *pg.Node_SelectStmt:
			selectValues(x.SelectStmt, walk, list)
		case *pg.Node_InsertStmt:
			s := x.InsertStmt
			walk(s.SelectStmt)
			if c := s.OnConflictClause; c != nil {
				list(c.TargetList)
				walk(c.WhereClause)
			}
			list(s.ReturningList)
			withValues(s.WithClause, walk)
		case *pg.Node_UpdateStmt:
			s := x.UpdateStmt
			list(s.TargetList)
			walk(s.WhereClause)
			list(s.FromClause)
			list(s.ReturningList)
			withValues(s.WithClause, walk)
		case *pg.Node_DeleteStmt:
			s := x.DeleteStmt
			list(s.UsingClause)
			walk(s.WhereClause)
			list(s.ReturningList)
			withValues(s.WithClause, walk)
		case *pg.Node_WithClause:
			withValues(x.WithClause, walk)
		case *pg.Node_CommonTableExpr:
			walk(x.CommonTableExpr.GetCtequery())
		case *pg.Node_ResTarget:
			walk(x.ResTarget.GetVal())
		case *pg.Node_AExpr:
			walk(x.AExpr.GetLexpr())
			walk(x.AExpr.GetRexpr())
			if x.AExpr.GetKind() == pg.A_Expr_Kind_AEXPR_IN {
				if first, n := valueList(x.AExpr.GetRexpr().GetList().GetItems()); n > 0 {
					if inLists == nil {
						inLists = map[int32]int{}
					}
					inLists[first] = n
				}
			}
		case *pg.Node_BoolExpr:
			list(x.BoolExpr.GetArgs())
		case *pg.Node_NullTest:
			walk(x.NullTest.GetArg())
		case *pg.Node_BooleanTest:
			walk(x.BooleanTest.GetArg())
		case *pg.Node_List:
			list(x.List.GetItems())
		case *pg.Node_SubLink:
			walk(x.SubLink.GetTestexpr())
			walk(x.SubLink.GetSubselect())
		case *pg.Node_JoinExpr:
			walk(x.JoinExpr.GetLarg())
			walk(x.JoinExpr.GetRarg())
			walk(x.JoinExpr.GetQuals())
		case *pg.Node_RangeSubselect:
			walk(x.RangeSubselect.GetSubquery())
		}
	}
	for _, raw := range tree.GetStmts() {
		walk(raw.GetStmt())
	}
	return locs, inLists
}

// valueList returns the location of the first of items and their number when every
// one is a constant or a parameter; 0 otherwise.
func valueList(items []*pg.Node) (first int32, n int) {
	for i, it := range items {
		var loc int32
		switch v := it.GetNode().(type) {
		case *pg.Node_AConst:
			loc = v.AConst.GetLocation()
		case *pg.Node_ParamRef:
			loc = v.ParamRef.GetLocation()
		default:
			return 0, 0
		}
		if i == 0 {
			first = loc
		}
	}
	return first, len(items)
}

// selectValues is valueConstants' walk of a SELECT. Its set-operation arms are
// SELECTs held directly, not as nodes.
func selectValues(s *pg.SelectStmt, walk func(*pg.Node), list func([]*pg.Node)) {
	if s == nil {
		return
	}
	list(s.TargetList)
	list(s.FromClause)
	walk(s.WhereClause)
	for _, row := range s.ValuesLists {
		walk(row)
	}
	walk(s.LimitCount)
	walk(s.LimitOffset)
	withValues(s.WithClause, walk)
	selectValues(s.Larg, walk, list)
	selectValues(s.Rarg, walk, list)
	walk(s.HavingClause)
}

func withValues(w *pg.WithClause, walk func(*pg.Node)) {
	for _, c := range w.GetCtes() {
		walk(c)
	}
}
