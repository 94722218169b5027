package sqlfence

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// maxStatementBytes bounds what reaches the C parser. pg_query recurses on nesting and
// a pathological statement can exhaust the stack and kill the process; nothing a job
// handler sends to a protected table needs to be this large.
const maxStatementBytes = 1 << 20

type action uint8

const (
	actPass    action = iota + 1 // send the application's text unchanged
	actRewrite                   // send text with the fence inserted, plus the epoch argument
	actRefuse                    // send nothing
	actClaim                     // send unchanged, but only from sqlfence's claim helpers
)

// decision is what sqlfence does with one SQL text under one policy. It depends on
// nothing else, which is what makes it cacheable.
type decision struct {
	act        action
	sql        string // the text to send for actRewrite
	epochParam int    // the epoch is parameter $epochParam
	refusal    *Error // for actRefuse
	tables     []*Table
	classify   *classifier // how to explain a 0-row result of the top-level write, or nil
	claim      *ClaimTable // the statement writes a claim table's epoch or status column
}

// table returns the name used in messages about this statement.
func (d *decision) table() string {
	if len(d.tables) == 0 {
		return ""
	}
	names := make([]string, 0, len(d.tables))
	for _, t := range d.tables {
		if n := t.QualifiedName.String(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// classifier explains a write that affected no rows: it selects the highest epoch
// stored on the rows the statement's own predicate matches, without the fence.
type classifier struct {
	table *Table
	// query selects max(epoch column) over the rows the write would have touched;
	// args[i] is the index into the statement's arguments of the query's $i+1.
	query string
	args  []int
	// conflictOnly: an INSERT … ON CONFLICT DO UPDATE of literal rows with no WHERE of
	// its own. Zero rows can then only mean every row conflicted and was fenced; the
	// stored epoch is not known.
	conflictOnly bool
	// returning: the write has a RETURNING list, so through QueryContext an empty
	// result is the 0-row case; without one, Query never tells how many rows changed.
	returning bool
}

// refuse builds the error for a statement sqlfence will not send.
func refuse(t *Table, reason, fix string) *Error {
	e := &Error{Kind: ErrRefused, Reason: reason, Fix: fix}
	if t != nil {
		e.Table = t.QualifiedName.String()
	}
	return e
}

// token is a lexical token of the statement, comments removed.
type token struct {
	start, end int
	tok        pg.Token
}

type edit struct {
	pos  int
	del  int
	text string
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
	top    *classifier
}

// decide parses sql and decides what to send. It never panics on input: any shape it
// does not understand ends in a refusal when it concerns a protected table.
func decide(policy *Policy, needles []string, sql string) (d *decision) {
	if !mayTouchProtected(needles, sql) {
		return &decision{act: actPass}
	}
	if len(sql) > maxStatementBytes {
		return &decision{act: actRefuse, refusal: refuse(nil,
			fmt.Sprintf("statement is %d bytes, more than the %d sqlfence parses", len(sql), maxStatementBytes),
			"split the statement, or send it through sqlfence.Unfenced with `unfenced: allow`")}
	}
	scan, err := pg.Scan(sql)
	if err != nil {
		return &decision{act: actRefuse, refusal: refuse(nil, "cannot parse the statement: "+err.Error(),
			"fix the SQL syntax; sqlfence never sends a statement it cannot read")}
	}
	r := &rewriter{sql: sql, policy: policy, done: map[proto.Message]bool{}}
	if e := r.tokenize(scan); e != nil {
		return &decision{act: actRefuse, refusal: e}
	}
	tree, err := pg.Parse(sql)
	if err != nil {
		return &decision{act: actRefuse, refusal: refuse(nil, "cannot parse the statement: "+err.Error(),
			"fix the SQL syntax; sqlfence never sends a statement it cannot read")}
	}
	writes, e := findWrites(policy, tree)
	if e != nil {
		return &decision{act: actRefuse, refusal: e}
	}
	claim := claimWrite(policy, tree)
	if len(writes) == 0 {
		if claim != nil {
			return &decision{act: actClaim, claim: claim}
		}
		return &decision{act: actPass}
	}
	if claim != nil {
		return &decision{act: actRefuse, refusal: refuse(writes[0].table,
			"the statement writes both a protected table and the claim table "+claim.QualifiedName.String(),
			"claim the job first with the claim helpers, then write under the claim's epoch")}
	}
	if len(tree.Stmts) != 1 {
		return &decision{act: actRefuse, refusal: refuse(writes[0].table,
			fmt.Sprintf("a string of %d statements writes a protected table", len(tree.Stmts)),
			"send each statement on its own so each can be fenced")}
	}
	if minParam(tree) < 1 {
		return &decision{act: actRefuse, refusal: refuse(writes[0].table, "the statement uses a parameter numbered below $1",
			"number parameters from $1")}
	}
	r.param = maxParam(tree) + 1
	raw := tree.Stmts[0]
	lo, hi := r.span(int(raw.StmtLocation), int(raw.StmtLen))
	if e := r.stmt(raw.Stmt, lo, hi, true); e != nil {
		return &decision{act: actRefuse, refusal: e}
	}
	for _, w := range writes {
		if !r.done[w.node] {
			return &decision{act: actRefuse, refusal: refuse(w.table,
				"the statement writes the table in a place sqlfence cannot fence",
				"write the table with a plain INSERT, UPDATE, DELETE or MERGE, or a data-modifying WITH at the top of the statement")}
		}
	}
	if len(r.edits) == 0 {
		// Every write is fenced by an edit; none means the statement writes nothing
		// (a MERGE whose only clause is WHEN NOT MATCHED THEN DO NOTHING).
		return &decision{act: actPass}
	}
	out := r.apply()
	if e := verify(tree, out); e != nil {
		e.Table = writes[0].table.QualifiedName.String()
		return &decision{act: actRefuse, refusal: e}
	}
	return &decision{act: actRewrite, sql: out, epochParam: int(r.param), tables: r.tables, classify: r.top}
}

// claimWrite finds a write to a claim table's epoch or status column: claiming, in
// effect. Only the claim helpers' statements may do that, or one job type could be
// claimed without incrementing the epoch and its writes would carry no token.
func claimWrite(p *Policy, tree *pg.ParseResult) *ClaimTable {
	if len(p.Claims) == 0 {
		return nil
	}
	var found *ClaimTable
	// allColumns: an INSERT without a column list writes every column, the claim
	// columns included.
	check := func(rv *pg.RangeVar, allColumns bool, lists ...[]*pg.Node) {
		if rv == nil || found != nil {
			return
		}
		c := p.MatchClaim(rv.Schemaname, rv.Relname)
		if c == nil {
			return
		}
		if allColumns {
			found = c
		}
		for _, l := range lists {
			for _, n := range l {
				if rt := n.GetResTarget(); rt != nil && (rt.Name == c.EpochColumn || rt.Name == c.StatusColumn) {
					found = c
				}
			}
		}
	}
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		switch s := m.Interface().(type) {
		case *pg.UpdateStmt:
			check(s.Relation, false, s.TargetList)
		case *pg.InsertStmt:
			check(s.Relation, len(s.Cols) == 0 && s.SelectStmt != nil, s.Cols, s.OnConflictClause.GetTargetList())
		case *pg.MergeStmt:
			for _, w := range s.MergeWhenClauses {
				c := w.GetMergeWhenClause()
				check(s.Relation, c.GetCommandType() == pg.CmdType_CMD_INSERT && len(c.GetTargetList()) == 0 && len(c.GetValues()) > 0, c.GetTargetList())
			}
		case *pg.CopyStmt:
			check(s.Relation, s.IsFrom)
		}
		return found == nil
	})
	return found
}

// mayTouchProtected is the pre-check that lets most statements skip the parser. It
// must never say no to a statement PostgreSQL would resolve to a protected table or a
// listed function: unquoted identifiers fold ASCII letters to lower case, so an ASCII
// case-insensitive search for every protected name is sound for plain and quoted
// identifiers; U&"…" identifiers can spell a name with escapes, so any U& forces a parse.
func mayTouchProtected(needles []string, sql string) bool {
	for _, n := range needles {
		if containsFold(sql, n) {
			return true
		}
	}
	return containsFold(sql, `u&"`)
}

// needlesOf lists what mayTouchProtected searches for: every protected table's and
// listed function's name, ASCII lower case, and its quoted spelling when it has a quote.
func needlesOf(p *Policy) []string {
	var out []string
	add := func(name string) {
		for _, n := range []string{asciiLower(name), asciiLower(strings.ReplaceAll(name, `"`, `""`))} {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, t := range p.Tables {
		add(t.Name)
	}
	for _, f := range p.Functions {
		add(f.Name)
	}
	for _, c := range p.Claims {
		add(c.Name)
	}
	add(standardStrings)
	add("set_config")
	return out
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// containsFold reports whether s contains lower (already ASCII lower case), comparing
// ASCII letters case-insensitively.
func containsFold(s, lower string) bool {
	n := len(lower)
	if n == 0 {
		return true
	}
	first := lower[0]
	for i := 0; i+n <= len(s); i++ {
		c := s[i]
		if c|0x20 != first && c != first {
			continue
		}
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

func (r *rewriter) tokenize(scan *pg.ScanResult) *Error {
	if _, msg := pgtree.Bounds(scan.Tokens); msg != "" {
		return refuse(nil, "the statement has "+msg+", which can crash the parser",
			"split the statement, or pass long lists of values as an array parameter")
	}
	r.toks = make([]token, 0, len(scan.Tokens))
	for _, t := range scan.Tokens {
		if t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT {
			continue
		}
		r.toks = append(r.toks, token{int(t.Start), int(t.End), t.Token})
	}
	r.depth = make([]int, len(r.toks))
	r.pair = make([]int, len(r.toks))
	var stack []int
	for i, t := range r.toks {
		r.depth[i] = len(stack)
		r.pair[i] = -1
		switch t.tok {
		case pg.Token_ASCII_40, pg.Token_ASCII_91, pg.Token_CASE:
			stack = append(stack, i)
		case pg.Token_ASCII_41, pg.Token_ASCII_93, pg.Token_END_P:
			if len(stack) > 0 {
				r.pair[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
				r.depth[i] = len(stack)
			}
		}
	}
	return nil
}

// span returns the token range of a statement at byte offset loc, length n (0: to the
// end), without a trailing semicolon.
func (r *rewriter) span(loc, n int) (lo, hi int) {
	end := len(r.sql)
	if n > 0 {
		end = loc + n
	}
	lo, _ = slices.BinarySearchFunc(r.toks, loc, func(t token, p int) int { return t.start - p })
	hi = lo
	for hi < len(r.toks) && r.toks[hi].start < end {
		hi++
	}
	for hi > lo && r.toks[hi-1].tok == pg.Token_ASCII_59 {
		hi--
	}
	return lo, hi
}

// find returns the first token in [from, hi) at depth base that satisfies match, or -1.
func (r *rewriter) find(from, hi, base int, match ...pg.Token) int {
	for i := max(from, 0); i < hi; i++ {
		if r.depth[i] == base && slices.Contains(match, r.toks[i].tok) {
			return i
		}
	}
	return -1
}

// clauseEnd returns the first token at depth base in [from, hi) that begins one of the
// given clauses, or hi. FROM after DISTINCT (IS DISTINCT FROM) and GROUP after WITHIN
// (WITHIN GROUP) belong to expressions, not clauses.
func (r *rewriter) clauseEnd(from, hi, base int, clauses ...pg.Token) int {
	for i := max(from, 0); i < hi; i++ {
		if r.depth[i] != base || !slices.Contains(clauses, r.toks[i].tok) {
			continue
		}
		if i > 0 {
			prev := r.toks[i-1].tok
			if r.toks[i].tok == pg.Token_FROM && prev == pg.Token_DISTINCT ||
				r.toks[i].tok == pg.Token_GROUP_P && prev == pg.Token_WITHIN {
				continue
			}
		}
		return i
	}
	return hi
}

func (r *rewriter) insert(pos int, text string) {
	r.edits = append(r.edits, edit{pos: pos, text: text})
}

func (r *rewriter) apply() string {
	slices.SortStableFunc(r.edits, func(a, b edit) int { return a.pos - b.pos })
	var b strings.Builder
	b.Grow(len(r.sql) + 64*len(r.edits))
	at := 0
	for _, e := range r.edits {
		b.WriteString(r.sql[at:e.pos])
		b.WriteString(e.text)
		at = e.pos + e.del
	}
	b.WriteString(r.sql[at:])
	return b.String()
}

func (r *rewriter) epochText() string { return "$" + strconv.Itoa(int(r.param)) + "::bigint" }

func (r *rewriter) fenceText(t *Table, qual string) string {
	return quoteIdent(qual) + "." + quoteIdent(t.EpochColumn) + " " + t.Mode.Operator() + " " + r.epochText()
}

func (r *rewriter) text(from, to int) string { return r.sql[r.toks[from].start:r.toks[to-1].end] }

func unexpected(t *Table, what string) *Error {
	return refuse(t, "sqlfence does not understand the shape of this statement ("+what+")",
		"rewrite the statement in a plainer form, or report it to the sqlfence maintainers")
}

// stmt fences the protected writes of a statement occupying tokens [lo, hi). top says
// the statement's row count is the one the application sees.
func (r *rewriter) stmt(n *pg.Node, lo, hi int, top bool) *Error {
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
		_, err := r.with(s.SelectStmt.WithClause, lo, hi)
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
		return r.stmt(s.ExplainStmt.Query, i, hi, false)
	}
	return nil
}

// with fences the data-modifying CTEs of a WITH clause at the start of [lo, hi) and
// returns the first token after the clause.
func (r *rewriter) with(w *pg.WithClause, lo, hi int) (int, *Error) {
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
		if err := r.stmt(cte.Ctequery, open+1, r.pair[open], false); err != nil {
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
		return t, refuse(t, t.unfenceable, "write the base table, or add the epoch column to the view's select list")
	}
	if ambiguous {
		return t, refuse(t, "the unqualified name "+quoteIdent(rv.Relname)+" matches several policy entries with different epoch columns or modes",
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
			return refuse(t, "the statement assigns the epoch column "+quoteIdent(t.EpochColumn)+" itself",
				"remove the assignment; sqlfence sets it from the context's epoch (sqlfence.WithEpoch)")
		}
	}
	return nil
}

func (r *rewriter) update(u *pg.UpdateStmt, lo, hi int, top bool) *Error {
	after, err := r.with(u.WithClause, lo, hi)
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
		return refuse(t, "UPDATE … WHERE CURRENT OF cannot carry the fence predicate",
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
	r.insert(r.toks[setEnd-1].end, ", "+quoteIdent(t.EpochColumn)+" = "+r.epochText())
	u.TargetList = append(u.TargetList, setTarget(t, r.param))
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
	after, err := r.with(d.WithClause, lo, hi)
	if err != nil {
		return err
	}
	t, err := r.target(d.Relation)
	if t == nil || err != nil {
		return err
	}
	if _, ok := d.WhereClause.GetNode().(*pg.Node_CurrentOfExpr); ok {
		return refuse(t, "DELETE … WHERE CURRENT OF cannot carry the fence predicate",
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
		r.insert(r.toks[ret-1].end, " WHERE "+fence)
		*where = fenceNode(t, qual, r.param)
		return ret, nil
	}
	w := r.find(from, hi, base, pg.Token_WHERE)
	if w < 0 || w+1 >= hi {
		return 0, unexpected(t, "WHERE clause")
	}
	end := r.clauseEnd(w+1, hi, base, pg.Token_RETURNING)
	r.insert(r.toks[w+1].start, "(")
	r.insert(r.toks[end-1].end, ") AND "+fence)
	*where = andNode(*where, fenceNode(t, qual, r.param))
	return end, nil
}

// classifier builds the query that explains a 0-row result from the statement's own
// pieces: its target, its FROM/USING list and its WHERE, with parameters renumbered
// so that only those the query uses are sent. A WITH clause is kept only when it is
// read-only; re-running a data-modifying CTE to explain a result would write twice.
func (r *rewriter) classifier(t *Table, qual string, deleted bool, w *pg.WithClause, lo, after int, target, from string, hasWhere bool, whereEnd int) *classifier {
	var b strings.Builder
	if w != nil {
		if !readOnlyWith(w) {
			return nil
		}
		b.WriteString(r.text(lo, after))
		b.WriteByte(' ')
	}
	col := quoteIdent(qual) + "." + quoteIdent(t.EpochColumn)
	fmt.Fprintf(&b, "SELECT max(%s)::bigint, count(*) FILTER (WHERE %s) FROM %s", col, fencedCondition(col, t, deleted), target)
	if from != "" {
		b.WriteString(", ")
		b.WriteString(from)
	}
	if hasWhere {
		b.WriteString(" WHERE (")
		b.WriteString(r.whereText(whereEnd))
		b.WriteString(")")
	}
	return renumber(t, b.String())
}

// whereText returns the condition that ends before token end: the text after the
// nearest WHERE at the same depth.
func (r *rewriter) whereText(end int) string {
	base := r.depth[end-1]
	for i := end - 1; i >= 0; i-- {
		if r.depth[i] < base {
			break
		}
		if r.depth[i] == base && r.toks[i].tok == pg.Token_WHERE {
			return r.text(i+1, end)
		}
	}
	return "false"
}

// epochMarker stands for the epoch parameter in a classifier query until renumber
// knows its number.
const epochMarker = "sqlfence_epoch_marker"

// fencedCondition is the condition that, after a write ran, picks out the rows it matched
// but the fence kept: rows an UPDATE wrote now hold the epoch itself, so a newer one
// means fenced; rows a DELETE removed are gone, so every remaining match was fenced.
func fencedCondition(col string, t *Table, deleted bool) string {
	if deleted {
		return "NOT (" + col + " " + t.Mode.Operator() + " " + epochMarker + ")"
	}
	return col + " > " + epochMarker
}

// renumber rewrites the parameters of query to $1..$n in order of first use and
// records which argument each one takes.
func renumber(t *Table, query string) *classifier {
	scan, err := pg.Scan(query)
	if err != nil {
		return nil
	}
	c := &classifier{table: t}
	seen := map[int]int{}
	for _, tk := range scan.Tokens {
		if tk.Token != pg.Token_PARAM {
			continue
		}
		n, err := strconv.Atoi(query[tk.Start+1 : tk.End])
		if err != nil || n < 1 {
			return nil
		}
		if _, ok := seen[n]; !ok {
			c.args = append(c.args, n-1)
			seen[n] = len(c.args)
		}
	}
	var b strings.Builder
	at := 0
	for _, tk := range scan.Tokens {
		var repl string
		switch {
		case tk.Token == pg.Token_PARAM:
			n, _ := strconv.Atoi(query[tk.Start+1 : tk.End])
			repl = "$" + strconv.Itoa(seen[n])
		case tk.Token == pg.Token_IDENT && query[tk.Start:tk.End] == epochMarker:
			// Only the marker the classifier wrote: a literal or a quoted name in the
			// application's text that happens to spell it is not an IDENT token.
			repl = "$" + strconv.Itoa(len(c.args)+1) + "::bigint"
		default:
			continue
		}
		b.WriteString(query[at:tk.Start])
		b.WriteString(repl)
		at = int(tk.End)
	}
	b.WriteString(query[at:])
	c.query = b.String()
	return c
}

func (r *rewriter) insertStmt(s *pg.InsertStmt, lo, hi int, top bool) *Error {
	after, err := r.with(s.WithClause, lo, hi)
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
	col := quoteIdent(t.EpochColumn)
	var body int // first token of the rows
	switch {
	case s.SelectStmt == nil: // DEFAULT VALUES
		def := r.find(into+1, hi, base, pg.Token_DEFAULT)
		if def < 0 || def+1 >= hi || r.toks[def+1].tok != pg.Token_VALUES {
			return unexpected(t, "INSERT without rows")
		}
		r.defaultValues(def, col)
		s.Cols = []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn}}}}
		s.SelectStmt = &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
			ValuesLists: []*pg.Node{pg.MakeListNode([]*pg.Node{epochNode(r.param)})},
			LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg.SetOperation_SETOP_NONE,
		}}}
		body = def + 2
	case len(s.Cols) == 0:
		return refuse(t, "INSERT into a protected table without a column list",
			"name the columns: INSERT INTO t (a, b) VALUES (…); sqlfence adds "+col+" to the list")
	default:
		open := r.find(into+1, hi, base, pg.Token_ASCII_40)
		if open < 0 || r.pair[open] < 0 {
			return unexpected(t, "INSERT column list")
		}
		close := r.pair[open]
		r.insert(r.toks[close-1].end, ", "+col)
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
		r.insert(r.toks[setEnd-1].end, ", "+col+" = "+r.epochText())
		oc.TargetList = append(oc.TargetList, setTarget(t, r.param))
		hadWhere := oc.WhereClause != nil
		if _, err := r.fenceWhere(t, qualifier(s.Relation), &oc.WhereClause, setEnd, hi, base); err != nil {
			return err
		}
		if top && !hadWhere && len(s.SelectStmt.GetSelectStmt().GetValuesLists()) > 0 {
			r.top = &classifier{table: t, conflictOnly: true, returning: len(s.ReturningList) > 0}
		}
	}
	r.done[s] = true
	r.tables = append(r.tables, t)
	return nil
}

// defaultValues turns DEFAULT VALUES (tokens def, def+1) into (col) VALUES ($e),
// replacing only the DEFAULT keyword so that anything between the two survives.
func (r *rewriter) defaultValues(def int, col string) {
	t := r.toks[def]
	r.edits = append(r.edits, edit{pos: t.start, del: t.end - t.start, text: "(" + col + ")"})
	r.insert(r.toks[def+1].end, " ("+r.epochText()+")")
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
	after, err := r.with(sel.WithClause, lo, hi)
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
			r.insert(r.toks[r.pair[i]-1].end, ", "+r.epochText())
			list.Items = append(list.Items, epochNode(r.param))
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
		r.insert(r.toks[end-1].end, ", "+r.epochText())
		sel.TargetList = append(sel.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: epochNode(r.param)}}})
		return nil
	}
}

func (r *rewriter) merge(m *pg.MergeStmt, lo, hi int, top bool) *Error {
	after, err := r.with(m.WithClause, lo, hi)
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
	col := quoteIdent(t.EpochColumn)
	for k, n := range m.MergeWhenClauses {
		c := n.GetMergeWhenClause()
		w, next := whens[k], whens[k+1]
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
				r.insert(r.toks[and+1].start, "(")
				r.insert(r.toks[then-1].end, ") AND "+fence)
				c.Condition = andNode(c.Condition, fenceNode(t, qual, r.param))
			} else {
				r.insert(r.toks[then-1].end, " AND "+fence)
				c.Condition = fenceNode(t, qual, r.param)
			}
		}
		switch c.CommandType {
		case pg.CmdType_CMD_UPDATE:
			r.insert(r.toks[next-1].end, ", "+col+" = "+r.epochText())
			c.TargetList = append(c.TargetList, setTarget(t, r.param))
		case pg.CmdType_CMD_INSERT:
			ins := r.find(then, next, base, pg.Token_INSERT)
			switch {
			case len(c.TargetList) == 0 && len(c.Values) == 0:
				def := r.find(ins, next, base, pg.Token_DEFAULT)
				if def < 0 || def+1 >= next {
					return unexpected(t, "MERGE INSERT DEFAULT VALUES")
				}
				r.defaultValues(def, col)
			case len(c.TargetList) == 0:
				return refuse(t, "MERGE … INSERT into a protected table without a column list",
					"name the columns: WHEN NOT MATCHED THEN INSERT (a, b) VALUES (…)")
			default:
				open := r.find(ins, next, base, pg.Token_ASCII_40)
				values := r.find(open+1, next, base, pg.Token_VALUES)
				if open < 0 || r.pair[open] < 0 || values < 0 || values+1 >= next || r.pair[values+1] < 0 {
					return unexpected(t, "MERGE INSERT")
				}
				r.insert(r.toks[r.pair[open]-1].end, ", "+col)
				r.insert(r.toks[r.pair[values+1]-1].end, ", "+r.epochText())
			}
			c.TargetList = append(c.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn}}})
			c.Values = append(c.Values, epochNode(r.param))
		}
	}
	if top {
		source := r.text(using+1, on)
		cond := r.text(on+1, whens[0])
		var b strings.Builder
		if m.WithClause != nil {
			b.WriteString(r.text(lo, after) + " ")
		}
		qcol := quoteIdent(qual) + "." + col
		fmt.Fprintf(&b, "SELECT max(%s)::bigint, count(*) FILTER (WHERE %s) FROM %s JOIN %s ON (%s)", qcol, fencedCondition(qcol, t, false),
			r.text(r.find(after, hi, base, pg.Token_INTO)+1, using), source, cond)
		if m.WithClause == nil || readOnlyWith(m.WithClause) {
			r.top = renumber(t, b.String())
			r.top.setReturning(m.ReturningList)
		}
	}
	r.done[m] = true
	r.tables = append(r.tables, t)
	return nil
}

func (c *classifier) setReturning(list []*pg.Node) {
	if c != nil {
		c.returning = len(list) > 0
	}
}

func readOnlyWith(w *pg.WithClause) bool {
	for _, c := range w.Ctes {
		q := c.GetCommonTableExpr().GetCtequery()
		if q.GetSelectStmt() == nil || hasWrite(q) {
			return false
		}
	}
	return true
}

// The nodes the fence adds, built exactly as the parser builds them from the text the
// rewrite inserts, so that verify can compare trees.

func epochNode(param int32) *pg.Node {
	return &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{
		Arg: &pg.Node{Node: &pg.Node_ParamRef{ParamRef: &pg.ParamRef{Number: param}}},
		TypeName: &pg.TypeName{
			Names:   []*pg.Node{pg.MakeStrNode("pg_catalog"), pg.MakeStrNode("int8")},
			Typemod: -1,
		},
	}}}
}

func fenceNode(t *Table, qual string, param int32) *pg.Node {
	return &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{
		Kind:  pg.A_Expr_Kind_AEXPR_OP,
		Name:  []*pg.Node{pg.MakeStrNode(t.Mode.Operator())},
		Lexpr: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(qual), pg.MakeStrNode(t.EpochColumn)}}}},
		Rexpr: epochNode(param),
	}}}
}

func setTarget(t *Table, param int32) *pg.Node {
	return &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: t.EpochColumn, Val: epochNode(param)}}}
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

// verify parses the rewritten text and compares its tree with the tree the rewrite
// meant to produce (the original, with the fence nodes added). Anything else — a
// misplaced insertion, a clause the rewrite misread — is refused, never sent.
func verify(want *pg.ParseResult, out string) *Error {
	got, err := pg.Parse(out)
	if err != nil {
		return unexpected(nil, "the fenced statement does not parse: "+err.Error())
	}
	if !pgtree.Equal(want.ProtoReflect(), got.ProtoReflect()) {
		return unexpected(nil, "the fenced statement does not parse to the intended tree")
	}
	return nil
}

func minParam(tree *pg.ParseResult) int32 {
	n := int32(1)
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg.ParamRef); ok && p.Number < n {
			n = p.Number
		}
		return true
	})
	return n
}

func maxParam(tree *pg.ParseResult) int32 {
	var n int32
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg.ParamRef); ok && p.Number > n {
			n = p.Number
		}
		return true
	})
	return n
}

func hasWrite(n *pg.Node) bool {
	found := false
	pgtree.Walk(n.ProtoReflect(), func(m protoreflect.Message) bool {
		switch m.Interface().(type) {
		case *pg.InsertStmt, *pg.UpdateStmt, *pg.DeleteStmt, *pg.MergeStmt:
			found = true
		}
		return !found
	})
	return found
}

// protectedWrite is a write to a protected table somewhere in a statement's tree.
type protectedWrite struct {
	node  proto.Message
	table *Table
}

// findWrites lists every write to a protected table anywhere in the tree, and refuses
// the statements sqlfence cannot fence at all. It is independent of the rewrite: a
// write the rewrite did not reach is refused because it is on this list.
func findWrites(p *Policy, tree *pg.ParseResult) ([]protectedWrite, *Error) {
	var (
		writes []protectedWrite
		err    *Error
	)
	var visit func(m protoreflect.Message) bool
	visit = func(m protoreflect.Message) bool {
		if err != nil {
			return false
		}
		var rv *pg.RangeVar
		switch s := m.Interface().(type) {
		case *pg.InsertStmt:
			rv = s.Relation
		case *pg.UpdateStmt:
			rv = s.Relation
		case *pg.DeleteStmt:
			rv = s.Relation
		case *pg.MergeStmt:
			rv = s.Relation
		case *pg.ExplainStmt:
			if !pgtree.ExplainAnalyze(s) {
				return false // plain EXPLAIN plans the write without running it
			}
		case *pg.TruncateStmt:
			for _, n := range s.Relations {
				if t := match(p, n.GetRangeVar()); t != nil {
					err = refuse(t, "TRUNCATE cannot be fenced",
						"delete the rows with DELETE under an epoch, or truncate outside the driver with the guard's operator override")
				}
			}
		case *pg.CopyStmt:
			if t := match(p, s.Relation); t != nil && s.IsFrom {
				err = refuse(t, "COPY FROM cannot be fenced",
					"insert the rows with INSERT … VALUES or INSERT … SELECT FROM unnest($1::…[]) under an epoch")
			}
		case *pg.PrepareStmt:
			if hasProtectedWrite(p, s.Query) {
				err = refuse(tableOf(p, s.Query), "PREPARE … AS a write to a protected table cannot bind an epoch at EXECUTE",
					"prepare through database/sql (db.PrepareContext): sqlfence fences prepared statements itself")
			}
			return false
		case *pg.DoStmt:
			err = doBlock(p, s)
			return false
		case *pg.CallStmt:
			if fn := s.GetFunccall(); fn != nil && listedFunction(p, fn.Funcname) {
				err = refuse(nil, "CALL of "+nameOf(fn.Funcname)+", which the policy lists as writing protected tables",
					"write the tables with plain statements under an epoch, or call it through sqlfence.Unfenced")
			}
		case *pg.FuncCall:
			if listedFunction(p, s.Funcname) {
				err = refuse(nil, "call of "+nameOf(s.Funcname)+", which the policy lists as writing protected tables",
					"write the tables with plain statements under an epoch, or call it through sqlfence.Unfenced")
			}
			if nameOf(s.Funcname) == "set_config" || nameOf(s.Funcname) == "pg_catalog.set_config" {
				if len(s.Args) == 0 || !isSafeSetting(s.Args[0].GetAConst().GetSval().GetSval()) {
					err = refuseSetting()
				}
			}
		case *pg.VariableSetStmt:
			if s.Name == standardStrings && !setsOn(s) {
				err = refuseSetting()
			}
		case *pg.RuleStmt, *pg.CreateFunctionStmt:
			// Their bodies write later, inside the database, where no epoch reaches.
			if t := tableIn(p, m); t != nil {
				err = refuse(t, "a rule or function body that writes a protected table runs without the fence",
					"create it outside the driver (in a migration) and install the database-side guard (sqlfence guard)")
			}
			return false
		}
		if t := match(p, rv); t != nil {
			writes = append(writes, protectedWrite{node: m.Interface(), table: t})
		}
		return err == nil
	}
	for _, s := range tree.Stmts {
		pgtree.Walk(s.ProtoReflect(), visit)
		if err != nil {
			return nil, err
		}
	}
	return writes, nil
}

func match(p *Policy, rv *pg.RangeVar) *Table {
	if rv == nil {
		return nil
	}
	t, _ := p.Match(rv.Schemaname, rv.Relname)
	return t
}

func hasProtectedWrite(p *Policy, n *pg.Node) bool { return tableOf(p, n) != nil }

func tableOf(p *Policy, n *pg.Node) *Table { return tableIn(p, n.ProtoReflect()) }

func tableIn(p *Policy, root protoreflect.Message) *Table {
	var t *Table
	pgtree.Walk(root, func(m protoreflect.Message) bool {
		switch s := m.Interface().(type) {
		case *pg.InsertStmt:
			t = match(p, s.Relation)
		case *pg.UpdateStmt:
			t = match(p, s.Relation)
		case *pg.DeleteStmt:
			t = match(p, s.Relation)
		case *pg.MergeStmt:
			t = match(p, s.Relation)
		}
		return t == nil
	})
	return t
}

// doBlock checks a DO block. The body is PL/pgSQL, which the SQL parser does not
// see into; pg_query's PL/pgSQL parser does, and every SQL statement and expression
// in it is checked like a statement of its own. A DO block has no parameters to carry
// an epoch, so a write to a protected table inside it is refused, not fenced; so is
// SQL text built from literals that name a protected table (EXECUTE 'UPDATE …'), and
// any body that cannot be parsed and mentions one.
func doBlock(p *Policy, s *pg.DoStmt) *Error {
	body, lang := "", "plpgsql"
	for _, a := range s.Args {
		d := a.GetDefElem()
		switch {
		case d == nil:
		case d.Defname == "as":
			body = d.Arg.GetString_().GetSval()
		case d.Defname == "language":
			lang = d.Arg.GetString_().GetSval()
		}
	}
	needles := needlesOf(p)
	if !mayTouchProtected(needles, body) {
		return nil
	}
	opaque := refuse(mentionedTable(p, body), "a DO block that sqlfence cannot read mentions a protected table",
		"run the writes as plain statements under sqlfence.WithEpoch")
	if lang != "plpgsql" {
		return opaque
	}
	tag := "$sqlfence_do$"
	for strings.Contains(body, tag) {
		tag = "$x" + tag[1:]
	}
	out, err := pg.ParsePlPgSqlToJSON("CREATE FUNCTION sqlfence_do() RETURNS void LANGUAGE plpgsql AS " + tag + body + tag)
	if err != nil {
		return opaque
	}
	var tree any
	if json.Unmarshal([]byte(out), &tree) != nil {
		return opaque
	}
	var result *Error
	var visit func(v any)
	visit = func(v any) {
		if result != nil {
			return
		}
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				visit(e)
			}
		case map[string]any:
			if e, ok := v["PLpgSQL_expr"].(map[string]any); ok {
				q, _ := e["query"].(string)
				if mode, _ := e["parseMode"].(float64); mode != 0 {
					q = "SELECT " + q
				}
				result = doStatement(p, needles, q, opaque)
				return
			}
			for _, e := range v {
				visit(e)
			}
		}
	}
	visit(tree)
	return result
}

// standardStrings is the one setting that changes how the server reads the text
// sqlfence parsed: with it off, a backslash escapes a quote inside '…', and a string
// literal to pg_query can be a statement boundary to the server. The registered driver
// sets it on in the startup message; changing it on a connection is refused.
const standardStrings = "standard_conforming_strings"

func refuseSetting() *Error {
	return refuse(nil, "changing "+standardStrings+" would let the server read statements differently from sqlfence",
		"leave it on (the default since PostgreSQL 9.1); write backslash escapes as E'…' strings")
}

// isSafeSetting reports whether set_config's first argument names a setting other than
// standard_conforming_strings. A name that is not a literal cannot be checked.
func isSafeSetting(name string) bool {
	return name != "" && !strings.EqualFold(name, standardStrings)
}

func setsOn(s *pg.VariableSetStmt) bool {
	switch s.Kind {
	case pg.VariableSetKind_VAR_RESET, pg.VariableSetKind_VAR_SET_DEFAULT:
		return true // back to the session's startup value
	case pg.VariableSetKind_VAR_SET_VALUE:
		if len(s.Args) != 1 {
			return false
		}
		c := s.Args[0].GetAConst()
		v := strings.ToLower(c.GetSval().GetSval())
		return v == "on" || v == "true" || v == "yes" || c.GetIval().GetIval() == 1 || c.GetBoolval().GetBoolval()
	}
	return false
}

// mentionedTable returns the first protected table whose name appears in text.
func mentionedTable(p *Policy, text string) *Table {
	for i := range p.Tables {
		if containsFold(text, asciiLower(p.Tables[i].Name)) {
			return &p.Tables[i]
		}
	}
	return nil
}

func doStatement(p *Policy, needles []string, q string, opaque *Error) *Error {
	if !mayTouchProtected(needles, q) {
		return nil
	}
	tree, err := pg.Parse(q)
	if err != nil {
		return opaque
	}
	writes, e := findWrites(p, tree)
	if e != nil {
		return e
	}
	if len(writes) > 0 {
		return refuse(writes[0].table, "a DO block writes the protected table, and a DO block has no parameter to carry the epoch",
			"run the write as a plain statement under sqlfence.WithEpoch")
	}
	if c := claimWrite(p, tree); c != nil {
		return refuse(nil, "a DO block writes the claim table "+c.QualifiedName.String(),
			"claim jobs with the helpers in github.com/sqlfence/sqlfence/claim")
	}
	var literal *Error
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if c, ok := m.Interface().(*pg.A_Const); ok && mayTouchProtected(needles, c.GetSval().GetSval()) {
			literal = refuse(mentionedTable(p, c.GetSval().GetSval()), "a DO block builds SQL text that names a protected table (dynamic EXECUTE cannot be fenced)",
				"run the write as a plain statement under sqlfence.WithEpoch")
		}
		return literal == nil
	})
	return literal
}

func listedFunction(p *Policy, name []*pg.Node) bool {
	schema, fn := pgtree.FuncName(name)
	return fn != "" && p.MatchFunction(schema, fn)
}

func nameOf(name []*pg.Node) string {
	parts := make([]string, 0, len(name))
	for _, n := range name {
		parts = append(parts, quoteIdent(n.GetString_().GetSval()))
	}
	return strings.Join(parts, ".")
}

// quoteIdent quotes an identifier unless PostgreSQL would read it back unchanged
// without quotes. Keywords are always quoted: harmless, and no keyword list to drift.
func quoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || 'a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '$')
	}
	if plain && !isKeyword(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func isKeyword(s string) bool {
	scan, err := pg.Scan(s)
	return err != nil || len(scan.Tokens) != 1 || scan.Tokens[0].KeywordKind != pg.KeywordKind_NO_KEYWORD
}

// Plan is what sqlfence does with one statement under a policy, for tools that check
// SQL without running it (sqlfence check) and for tests.
type Plan struct {
	// Tables lists the protected tables the statement writes, as the policy names them.
	Tables []string
	// Fenced is the text sqlfence sends, with the fence inserted; "" when the
	// statement is sent unchanged.
	Fenced string
	// EpochParam is the parameter number that carries the epoch in Fenced.
	EpochParam int
	// Err is the *Error (matching ErrRefused) when sqlfence refuses the statement.
	Err error
	// ClaimTable names the claim table whose status or epoch column the statement
	// writes: the driver sends it only from the claim helpers, and refuses it otherwise.
	ClaimTable string
}

// Plan decides what sqlfence would do with query, without a database.
func (p *Policy) Plan(query string) Plan {
	d := decide(p, needlesOf(p), query)
	var out Plan
	if d.act == actRefuse {
		out.Err = d.refusal.with(query, 0)
		if d.refusal.Table != "" {
			out.Tables = []string{d.refusal.Table}
		}
		return out
	}
	for _, t := range d.tables {
		if n := t.QualifiedName.String(); !slices.Contains(out.Tables, n) {
			out.Tables = append(out.Tables, n)
		}
	}
	if d.act == actRewrite {
		out.Fenced, out.EpochParam = d.sql, d.epochParam
	}
	if d.claim != nil {
		out.ClaimTable = d.claim.QualifiedName.String()
	}
	return out
}
