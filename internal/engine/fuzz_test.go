package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// FuzzRewrite checks decide, the function every statement goes through, against
// properties stated independently of the rewrite code: the checks below parse the
// input and the output with pg_query themselves and walk the trees with their own
// walker and their own reading of the policy.
//
//   - decide never panics and is deterministic (the decision cache relies on it);
//   - a rewrite sends one statement in which every INSERT, UPDATE, DELETE and MERGE
//     on a protected table carries the epoch parameter $N::bigint, N one past the
//     highest parameter of the input: UPDATE assigns the epoch column once, to the
//     epoch, and has `qual.col op $N::bigint` as a top-level conjunct of its WHERE;
//     DELETE has the conjunct; INSERT lists the column once and puts the epoch at
//     its position in every VALUES row and in every select list of every set
//     operation arm; ON CONFLICT DO UPDATE assigns and fences; MERGE fences every
//     WHEN MATCHED and WHEN NOT MATCHED BY SOURCE clause, assigns in every UPDATE
//     and inserts the epoch in every INSERT. The output keeps every token of the
//     input, comments included, in order (DEFAULT VALUES is the one replacement);
//     the query that explains a 0-row result is a single read-only SELECT whose
//     parameters are the statement's own;
//   - a pass-through does not write a protected table (nor TRUNCATE, COPY FROM,
//     PREPARE a write to, CALL a listed function on, or mention in a DO block, one);
//     a statement that does not parse may pass only when it names no protected table
//     or listed function, so that the pre-check could not match it;
//   - a refusal carries an error matching ErrRefused, with a refusal's rule code;
//   - under a claim (stale: row, and every table under stale: claim) the same holds
//     with the claim check in place of the epoch: every stamp is the check, every
//     fence compares with it (stale: claim: requires it non-NULL), the claim's key
//     is the parameter after the epoch, and a claim never changes whether a
//     statement passes (fuzz_claim_test.go).
//
// The seed corpus is every statement under testdata/rewrite and testdata/rewrite_claim
// plus the files under testdata/fuzz/FuzzRewrite; `go test` runs them as ordinary
// tests. The long run:
//
//	go test -run '^$' -fuzz FuzzRewrite -fuzztime 10m .
func FuzzRewrite(f *testing.F) {
	p := testPolicy(f)
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	claimFiles, _ := filepath.Glob("../../testdata/rewrite_claim/*.sql")
	files = append(files, claimFiles...)
	if len(files) == 0 {
		f.Fatal("no golden files to seed the fuzzer with")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		in, _, _ := strings.Cut(string(data), goldenSeparator)
		f.Add(in)
	}
	cc, cl, pc := fuzzClaims(p)
	f.Fuzz(func(t *testing.T, sql string) {
		d := Analyze(p, sql)
		if problems := checkDecision(p, sql, d); len(problems) > 0 {
			t.Fatalf("statement:\n%s\ndecision: %s\nproblems:\n  %s", sql, outcome(d), strings.Join(problems, "\n  "))
		}
		for _, p := range []*Policy{p, pc} {
			if problems := checkClaimVariant(p, sql, d, cc, cl); len(problems) > 0 {
				t.Fatalf("statement under a claim (stale: %v):\n%s\ndecision: %s\nproblems:\n  %s", p.Tables[0].Stale, sql, outcome(analyzeWith(p, sql, cc)), strings.Join(problems, "\n  "))
			}
		}
		again := Analyze(p, sql)
		if again.act != d.act || again.sql != d.sql || again.epochParam != d.epochParam {
			t.Fatalf("statement:\n%s\ndecide is not deterministic: %s, then %s", sql, outcome(d), outcome(again))
		}
	})
}

// checkDecision returns what is wrong with decision d for sql, or nothing.
func checkDecision(p *Policy, sql string, d *Decision) []string {
	return checkDecisionUnder(p, sql, d, nil)
}

// checkDecisionUnder is checkDecision for a decision made under the claim cl (nil:
// none).
func checkDecisionUnder(p *Policy, sql string, d *Decision, cl *fuzzClaim) []string {
	switch d.act {
	case ActRefuse:
		if d.refusal == nil || d.refusal.Kind != KindRefused {
			return []string{fmt.Sprintf("refusal without a KindRefused error: %#v", d.refusal)}
		}
		if info, ok := rulecode.Lookup(d.refusal.Code); !ok || info.Kind != rulecode.KindRefused {
			return []string{fmt.Sprintf("refusal without a refusal's rule code: %#v", d.refusal)}
		}
		return nil
	case ActPass:
		return checkPass(p, sql)
	case ActClaim:
		// Sent unchanged (from the claim helpers only): the same promise as a pass.
		problems := checkPass(p, sql)
		if d.claimTable == nil {
			problems = append(problems, "a claim decision without its claim table")
		}
		return problems
	case ActRewrite:
		return checkRewrite(p, sql, d, cl)
	}
	return []string{fmt.Sprintf("unknown Action %d", d.act)}
}

// mentionsProtected is the fuzzer's own statement of what the pre-check may skip: a
// text that spells no protected table or listed function (PostgreSQL folds unquoted
// identifiers with ASCII rules only) and has no U&"…" identifier cannot name one.
func mentionsProtected(p *Policy, sql string) bool {
	lower := fuzzASCIILower(sql)
	if strings.Contains(lower, `u&"`) {
		return true
	}
	for _, t := range p.Tables {
		if strings.Contains(lower, fuzzASCIILower(t.Name)) {
			return true
		}
	}
	for _, fn := range p.Functions {
		if strings.Contains(lower, fuzzASCIILower(fn.Name)) {
			return true
		}
	}
	return false
}

func fuzzASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func checkPass(p *Policy, sql string) []string {
	if !mentionsProtected(p, sql) {
		return nil
	}
	tree, err := pgquery.Parse(sql)
	if err != nil {
		return []string{"passed a statement that names a protected table and does not parse: " + err.Error()}
	}
	var problems []string
	fuzzWalk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		switch s := m.Interface().(type) {
		case *pg.ExplainStmt:
			return explainRuns(s) // a plain EXPLAIN plans its statement without running it
		case *pg.InsertStmt, *pg.UpdateStmt, *pg.DeleteStmt, *pg.MergeStmt:
			if t := protectedTable(p, writtenRelation(m)); t != nil && !mergeDoesNothing(s) {
				problems = append(problems, fmt.Sprintf("passed a %T on protected table %s", s, t.QualifiedName))
			}
		case *pg.TruncateStmt:
			for _, n := range s.Relations {
				if t := protectedTable(p, n.GetRangeVar()); t != nil {
					problems = append(problems, "passed TRUNCATE of protected table "+t.QualifiedName.String())
				}
			}
		case *pg.CopyStmt:
			if t := protectedTable(p, s.Relation); t != nil && s.IsFrom {
				problems = append(problems, "passed COPY FROM into protected table "+t.QualifiedName.String())
			}
		case *pg.DoStmt:
			problems = append(problems, checkDoBlock(p, s)...)
		case *pg.FuncCall:
			if listed(p, s.Funcname) {
				problems = append(problems, "passed a call of a listed function")
			}
		}
		return true
	})
	return problems
}

// checkDoBlock: a DO block that is sent must not write a protected table. Its body is
// PL/pgSQL; every SQL statement and expression in it (pg_query's PL/pgSQL parser
// finds them) is checked like a statement of its own, and must be readable if it
// mentions a protected table. A block that runs dynamic SQL (EXECUTE …) must have no
// string constant naming a protected table anywhere, since any of them may end up in
// the executed text. SQL text assembled at run time from pieces that do not name the
// table is beyond any parser (the database-side guard closes that path).
func checkDoBlock(p *Policy, s *pg.DoStmt) []string {
	body, lang := "", "plpgsql"
	for _, a := range s.Args {
		switch d := a.GetDefElem(); d.GetDefname() {
		case "as":
			body = d.Arg.GetString_().GetSval()
		case "language":
			lang = d.Arg.GetString_().GetSval()
		}
	}
	if !mentionsProtected(p, body) {
		return nil
	}
	if lang != "plpgsql" {
		return []string{"passed a DO block in " + lang + " that mentions a protected table"}
	}
	tag := "$fuzz$"
	for strings.Contains(body, tag) {
		tag = "$f" + tag[1:]
	}
	out, err := pgquery.ParsePlPgSqlToJSON("CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS " + tag + body + tag)
	if err != nil {
		return []string{"passed a DO block that mentions a protected table and does not parse: " + err.Error()}
	}
	var tree any
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		return []string{"pg_query's PL/pgSQL tree does not decode: " + err.Error()}
	}
	// Every SQL expression and statement in the body, and whether any of them is a
	// query string run at run time (EXECUTE …, FOR … IN EXECUTE, OPEN … FOR EXECUTE,
	// RETURN QUERY EXECUTE).
	type expr struct {
		query string
		mode  float64
	}
	var (
		exprs   []expr
		dynamic bool
	)
	// stmt is the PL/pgSQL statement kind the value belongs to, field the field of it
	// that holds the value.
	var visit func(v any, stmt, field string)
	visit = func(v any, stmt, field string) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				visit(e, stmt, field)
			}
		case map[string]any:
			if e, ok := v["PLpgSQL_expr"].(map[string]any); ok {
				q, _ := e["query"].(string)
				mode, _ := e["parseMode"].(float64)
				exprs = append(exprs, expr{q, mode})
				dynamic = dynamic || field == "dynquery" || field == "query" && (stmt == "PLpgSQL_stmt_dynexecute" || stmt == "PLpgSQL_stmt_dynfors")
				return
			}
			for k, e := range v {
				if strings.HasPrefix(k, "PLpgSQL_stmt_") {
					visit(e, k, "")
				} else {
					visit(e, stmt, k)
				}
			}
		}
	}
	visit(tree, "", "")
	var problems []string
	for _, e := range exprs {
		if !mentionsProtected(p, e.query) {
			continue
		}
		sql := e.query
		switch e.mode {
		case 0: // a statement
		case 2: // an expression
			sql = "SELECT " + sql
		default: // an assignment: target := expression
			_, rhs, ok := strings.Cut(sql, ":=")
			if !ok {
				_, rhs, _ = strings.Cut(sql, "=")
			}
			sql = "SELECT " + rhs
		}
		tree, err := pgquery.Parse(sql)
		if err != nil {
			problems = append(problems, "passed a DO block with an unreadable expression that mentions a protected table: "+e.query)
			continue
		}
		if sub := checkPass(p, sql); len(sub) > 0 {
			problems = append(problems, "in a DO block: "+strings.Join(sub, "; "))
		}
		if !dynamic {
			continue
		}
		for k := range stringConsts(tree) {
			if mentionsProtected(p, k) {
				problems = append(problems, "passed a DO block that runs dynamic SQL and has a string naming a protected table: "+e.query)
			}
		}
	}
	return problems
}

// explainRuns reports whether an EXPLAIN executes its statement. It errs towards yes:
// only an ANALYZE option whose value is plainly false counts as not running.
func explainRuns(e *pg.ExplainStmt) bool {
	for _, o := range e.Options {
		d := o.GetDefElem()
		if d == nil || d.Defname != "analyze" {
			continue
		}
		switch {
		case d.Arg == nil:
			return true
		case d.Arg.GetString_() != nil:
			switch strings.ToLower(d.Arg.GetString_().Sval) {
			case "false", "off", "0", "no":
			default:
				return true
			}
		case d.Arg.GetInteger() != nil:
			if d.Arg.GetInteger().Ival != 0 {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func writtenRelation(m protoreflect.Message) *pg.RangeVar {
	switch s := m.Interface().(type) {
	case *pg.InsertStmt:
		return s.Relation
	case *pg.UpdateStmt:
		return s.Relation
	case *pg.DeleteStmt:
		return s.Relation
	case *pg.MergeStmt:
		return s.Relation
	}
	return nil
}

// protectedTable reads the policy the way docs/policy.md states it: an unqualified entry
// protects the name in every schema; a qualified entry protects that schema's table
// and unqualified references to the name.
func protectedTable(p *Policy, rv *pg.RangeVar) *Table {
	if rv == nil {
		return nil
	}
	for i := range p.Tables {
		t := &p.Tables[i]
		if t.Name == rv.Relname && (t.Schema == "" || rv.Schemaname == "" || t.Schema == rv.Schemaname) {
			return t
		}
	}
	return nil
}

func listed(p *Policy, name []*pg.Node) bool {
	var parts []string
	for _, n := range name {
		parts = append(parts, n.GetString_().GetSval())
	}
	if len(parts) == 0 {
		return false
	}
	fn := parts[len(parts)-1]
	schema := ""
	if len(parts) > 1 {
		schema = parts[len(parts)-2]
	}
	for _, l := range p.Functions {
		if l.Name == fn && (l.Schema == "" || schema == "" || l.Schema == schema) {
			return true
		}
	}
	return false
}

// fuzzWalk calls f on every message of the tree, depth first; f returns false to
// skip the message's children.
func fuzzWalk(m protoreflect.Message, f func(protoreflect.Message) bool) {
	if !f(m) {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			for i, l := 0, v.List(); i < l.Len(); i++ {
				fuzzWalk(l.Get(i).Message(), f)
			}
			return true
		}
		fuzzWalk(v.Message(), f)
		return true
	})
}

func fuzzMaxParam(m protoreflect.Message) int32 {
	var n int32
	fuzzWalk(m, func(m protoreflect.Message) bool {
		if p, ok := m.Interface().(*pg.ParamRef); ok && p.Number > n {
			n = p.Number
		}
		return true
	})
	return n
}

// fenceChecker checks the protected writes of a rewritten statement.
type fenceChecker struct {
	p        *Policy
	in       *pg.ParseResult
	param    int32
	claim    *fuzzClaim // the writes are checked against this claim, its key parameter $param+1
	problems []string
	writes   int
}

func (c *fenceChecker) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func checkRewrite(p *Policy, sql string, d *Decision, cl *fuzzClaim) []string {
	in, err := pgquery.Parse(sql)
	if err != nil {
		return []string{"rewrote a statement that does not parse: " + err.Error()}
	}
	want := fuzzMaxParam(in.ProtoReflect()) + 1
	c := &fenceChecker{p: p, in: in, param: want, claim: cl}
	if int32(d.epochParam) != want {
		c.errorf("epoch parameter $%d, want $%d (one past the highest parameter of the input)", d.epochParam, want)
	}
	if d.checked != (cl != nil) {
		c.errorf("decision checks a claim: %v, made under a claim: %v", d.checked, cl != nil)
	}
	if cl != nil {
		want++ // the claim's key
	}
	out, err := pgquery.Parse(d.sql)
	if err != nil {
		return append(c.problems, "the rewritten statement does not parse: "+err.Error())
	}
	if len(out.Stmts) != 1 {
		c.errorf("rewrite sends %d statements", len(out.Stmts))
	}
	if got := fuzzMaxParam(out.ProtoReflect()); got != want {
		c.errorf("highest parameter of the output is $%d, want $%d (the epoch, then the claim's key)", got, want)
	}
	fuzzWalk(out.ProtoReflect(), c.visit)
	inWrites := 0
	fuzzWalk(in.ProtoReflect(), func(m protoreflect.Message) bool {
		if protectedTable(p, writtenRelation(m)) != nil {
			inWrites++
		}
		return true
	})
	if inWrites != c.writes || c.writes == 0 {
		c.errorf("the input has %d protected writes, the output %d", inWrites, c.writes)
	}
	if missing := missingTokens(sql, d.sql); missing != "" {
		c.errorf("the output lost the input's token %q", missing)
	}
	if cl := d.zeroRows.numbered(); cl != nil && cl.query != "" {
		c.checkClassifier(d, cl)
	} else if d.zeroRows != nil && !d.zeroRows.conflictOnly && !d.zeroRows.lazy {
		c.errorf("the 0-row classification query cannot be renumbered")
	}
	return c.problems
}

func (c *fenceChecker) visit(m protoreflect.Message) bool {
	switch s := m.Interface().(type) {
	case *pg.ExplainStmt:
		if !explainRuns(s) {
			c.errorf("a rewrite contains a plain EXPLAIN")
		}
	case *pg.UpdateStmt:
		if t := protectedTable(c.p, s.Relation); t != nil {
			c.writes++
			c.assigned(t, "UPDATE", s.TargetList)
			c.fenced(t, "UPDATE", qualifierOf(s.Relation), s.WhereClause)
		}
	case *pg.DeleteStmt:
		if t := protectedTable(c.p, s.Relation); t != nil {
			c.writes++
			c.fenced(t, "DELETE", qualifierOf(s.Relation), s.WhereClause)
		}
	case *pg.InsertStmt:
		if t := protectedTable(c.p, s.Relation); t != nil {
			c.writes++
			if k := c.column(t, "INSERT", s.Cols); k >= 0 {
				c.rows(t, s.SelectStmt.GetSelectStmt(), k, len(s.Cols))
			}
			if oc := s.OnConflictClause; oc != nil && oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
				c.assigned(t, "ON CONFLICT DO UPDATE", oc.TargetList)
				c.fenced(t, "ON CONFLICT DO UPDATE", qualifierOf(s.Relation), oc.WhereClause)
			}
		}
	case *pg.MergeStmt:
		if t := protectedTable(c.p, s.Relation); t != nil {
			c.writes++
			for _, n := range s.MergeWhenClauses {
				w := n.GetMergeWhenClause()
				what := "MERGE WHEN " + w.MatchKind.String()
				if w.MatchKind != pg.MergeMatchKind_MERGE_WHEN_NOT_MATCHED_BY_TARGET {
					c.fenced(t, what, qualifierOf(s.Relation), w.Condition)
				}
				switch w.CommandType {
				case pg.CmdType_CMD_UPDATE:
					c.assigned(t, what+" UPDATE", w.TargetList)
				case pg.CmdType_CMD_INSERT:
					if k := c.column(t, what+" INSERT", w.TargetList); k >= 0 {
						c.row(t, what+" INSERT", w.Values, k, len(w.TargetList))
					}
				}
			}
		}
	}
	return true
}

func qualifierOf(rv *pg.RangeVar) string {
	if rv.Alias != nil && rv.Alias.Aliasname != "" {
		return rv.Alias.Aliasname
	}
	return rv.Relname
}

// isEpoch: the node is `$N::bigint`.
func (c *fenceChecker) isEpoch(n *pg.Node) bool {
	tc := n.GetTypeCast()
	if tc == nil || tc.Arg.GetParamRef().GetNumber() != c.param || tc.TypeName == nil ||
		len(tc.TypeName.Typmods) > 0 || len(tc.TypeName.ArrayBounds) > 0 || tc.TypeName.Setof || len(tc.TypeName.Names) != 2 {
		return false
	}
	return tc.TypeName.Names[0].GetString_().GetSval() == "pg_catalog" && tc.TypeName.Names[1].GetString_().GetSval() == "int8"
}

// assigned: the SET list assigns the epoch column exactly once, to the epoch.
func (c *fenceChecker) assigned(t *Table, what string, targets []*pg.Node) {
	n := 0
	for _, x := range targets {
		rt := x.GetResTarget()
		if rt == nil || rt.Name != t.EpochColumn {
			continue
		}
		n++
		if len(rt.Indirection) > 0 || !c.isStamp(rt.Val) {
			c.errorf("%s on %s assigns %s something other than $%d::bigint", what, t.QualifiedName, t.EpochColumn, c.param)
		}
	}
	if n != 1 {
		c.errorf("%s on %s assigns %s %d times, want once", what, t.QualifiedName, t.EpochColumn, n)
	}
}

// fenced: `qual.col OPERATOR(pg_catalog.op) $N::bigint` is a conjunct at the top level
// of cond. Only the schema-qualified operator counts: a bare `<` resolves through
// search_path, and sqlfence never writes one.
func (c *fenceChecker) fenced(t *Table, what, qual string, cond *pg.Node) {
	if c.claim != nil && t.Stale == StaleClaim {
		c.claimFenced(t, what, cond)
		return
	}
	op := "<"
	if t.Mode == ModeRepeatable {
		op = "<="
	}
	for _, n := range conjuncts(cond) {
		e := n.GetAExpr()
		if e == nil || e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(e.Name) != 2 ||
			e.Name[0].GetString_().GetSval() != "pg_catalog" || e.Name[1].GetString_().GetSval() != op || !c.isStamp(e.Rexpr) {
			continue
		}
		f := e.Lexpr.GetColumnRef().GetFields()
		if len(f) == 2 && f[0].GetString_().GetSval() == qual && f[1].GetString_().GetSval() == t.EpochColumn {
			return
		}
	}
	c.errorf("%s on %s lacks the top-level conjunct %s.%s OPERATOR(pg_catalog.%s) $%d::bigint", what, t.QualifiedName, qual, t.EpochColumn, op, c.param)
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

// column returns the position of the epoch column in an INSERT column list, which
// must name it exactly once.
func (c *fenceChecker) column(t *Table, what string, cols []*pg.Node) int {
	k, n := -1, 0
	for i, x := range cols {
		if rt := x.GetResTarget(); rt != nil && rt.Name == t.EpochColumn {
			k, n = i, n+1
		}
	}
	if n != 1 || len(cols[k].GetResTarget().Indirection) > 0 {
		c.errorf("%s into %s names %s %d times, want once", what, t.QualifiedName, t.EpochColumn, n)
		return -1
	}
	return k
}

// rows checks every row an INSERT's query produces: VALUES rows and the select list
// of every arm of a set operation.
func (c *fenceChecker) rows(t *Table, sel *pg.SelectStmt, k, ncols int) {
	switch {
	case sel == nil:
		c.errorf("INSERT into %s without rows (DEFAULT VALUES) in a rewrite", t.QualifiedName)
	case sel.Op != pg.SetOperation_SETOP_NONE:
		c.rows(t, sel.Larg, k, ncols)
		c.rows(t, sel.Rarg, k, ncols)
	case len(sel.ValuesLists) > 0:
		for _, r := range sel.ValuesLists {
			c.row(t, "INSERT VALUES", r.GetList().GetItems(), k, ncols)
		}
	default:
		var items []*pg.Node
		for _, x := range sel.TargetList {
			items = append(items, x.GetResTarget().GetVal())
		}
		c.row(t, "INSERT SELECT", items, k, ncols)
	}
}

// row: the epoch is the item at the column's position. A row whose length differs
// from the column list is an error in PostgreSQL, unless a * expands it; then the
// epoch must be last and the column last, so that it lands in place or the row
// fails.
func (c *fenceChecker) row(t *Table, what string, items []*pg.Node, k, ncols int) {
	star := false
	for _, it := range items {
		if f := it.GetColumnRef().GetFields(); len(f) > 0 && f[len(f)-1].GetAStar() != nil {
			star = true
		}
	}
	switch {
	case star:
		if k != ncols-1 || len(items) == 0 || !c.isStamp(items[len(items)-1]) {
			c.errorf("%s into %s: a row with * does not end with the epoch", what, t.QualifiedName)
		}
	case len(items) != ncols:
		// PostgreSQL rejects the statement.
	case !c.isStamp(items[k]):
		c.errorf("%s into %s: the row does not carry $%d::bigint at position %d of %d", what, t.QualifiedName, c.param, k+1, ncols)
	}
}

// checkClassifier: the query that explains a 0-row result runs without the fence, so
// it must be a single read-only SELECT using only the statement's own arguments.
func (c *fenceChecker) checkClassifier(d *Decision, cl *Classifier) {
	q := cl.query
	tree, err := pgquery.Parse(q)
	if err != nil {
		c.errorf("the 0-row classification query does not parse: %v\n  %s", err, q)
		return
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
		c.errorf("the 0-row classification query is not one SELECT: %s", q)
		return
	}
	fuzzWalk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		switch s := m.Interface().(type) {
		case *pg.InsertStmt, *pg.UpdateStmt, *pg.DeleteStmt, *pg.MergeStmt:
			c.errorf("the 0-row classification query writes (%T): %s", s, q)
		case *pg.FuncCall:
			if listed(c.p, s.Funcname) {
				c.errorf("the 0-row classification query calls a listed function: %s", q)
			}
		}
		return true
	})
	// The statement's arguments it uses, then the epoch.
	if n := int(fuzzMaxParam(tree.ProtoReflect())); n > len(cl.args)+1 {
		c.errorf("the 0-row classification query uses $%d but binds %d arguments and the epoch: %s", n, len(cl.args), q)
	}
	// It is built from the statement's own text: every string constant in it is one
	// the statement has.
	have := stringConsts(c.in)
	for k := range stringConsts(tree) {
		if !have[k] {
			c.errorf("the 0-row classification query has the string constant %q, which the statement does not: %s", k, q)
		}
	}
	for _, a := range cl.args {
		if a < 0 || a >= d.epochParam-1 {
			c.errorf("the 0-row classification query binds argument index %d of a statement with %d: %s", a, d.epochParam-1, q)
		}
	}
}

func stringConsts(tree *pg.ParseResult) map[string]bool {
	out := map[string]bool{}
	fuzzWalk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if c, ok := m.Interface().(*pg.A_Const); ok && c.GetSval() != nil {
			out[c.GetSval().GetSval()] = true
		}
		return true
	})
	return out
}

// missingTokens checks that the output keeps every token of the input, comments
// included, in order; it returns the first one it lost. DEFAULT VALUES is the one
// phrase the rewrite replaces.
func missingTokens(in, out string) string {
	toks := func(s string) []string {
		scan, err := pgquery.Scan(s)
		if err != nil {
			return nil
		}
		var ts []string
		for _, t := range scan.Tokens {
			ts = append(ts, s[t.Start:t.End])
		}
		return ts
	}
	a, b := toks(in), toks(out)
	isComment := func(s string) bool { return strings.HasPrefix(s, "--") || strings.HasPrefix(s, "/*") }
	j := 0
	skip := -1 // the VALUES of a DEFAULT VALUES
	for i := 0; i < len(a); i++ {
		if i == skip {
			continue
		}
		if strings.EqualFold(a[i], "default") {
			k := i + 1
			for k < len(a) && isComment(a[k]) {
				k++
			}
			if k < len(a) && strings.EqualFold(a[k], "values") {
				skip = k
				continue
			}
		}
		for j < len(b) && b[j] != a[i] {
			j++
		}
		if j == len(b) {
			return a[i]
		}
		j++
	}
	return ""
}

// deepInputs are statements whose parse trees are tens of thousands of levels deep
// without a long operator chain or token run between two commas: the commas sit
// inside parentheses one level down, but they reset decide's counters for the whole
// statement. The C parser recurses once per level and overflows its stack, which
// kills the process; decide must refuse them before they reach it.
var deepInputs = map[string]func() string{
	"operator chain of calls with commas": func() string {
		return "UPDATE inventory SET quantity = " + strings.Repeat("f(1,1)+", 50000) + "1"
	},
	"join chain with commas in USING": func() string {
		return "UPDATE inventory SET quantity = 1 FROM s" + strings.Repeat(" JOIN s USING (a,b)", 45000)
	},
	"set operation chain with commas": func() string {
		return "INSERT INTO inventory (sku, quantity) SELECT 1,1" + strings.Repeat(" UNION SELECT 1,1", 55000)
	},
}

const deepChildEnv = "SQLFENCE_TEST_DEEP_INPUT"

// TestDecideDeepInputs runs decide on each of deepInputs in a child process (a stack
// overflow in C cannot be recovered from) and requires a refusal.
func TestDecideDeepInputs(t *testing.T) {
	if name := os.Getenv(deepChildEnv); name != "" {
		p := testPolicy(t)
		d := Analyze(p, deepInputs[name]())
		fmt.Printf("outcome: %.100s\n", outcome(d))
		return
	}
	for name := range deepInputs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestDecideDeepInputs$", "-test.count=1")
			cmd.Env = append(os.Environ(), deepChildEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				first, _, _ := strings.Cut(string(out), "\n\n")
				t.Fatalf("decide crashed the process (commas inside parentheses reset the operator-chain and token-run bounds for the whole statement): %v\n%.300s", err, first)
			}
			if !strings.Contains(string(out), "outcome: REFUSED") {
				t.Fatalf("decide did not refuse it:\n%.600s", out)
			}
		})
	}
}

// TestFuzzCheckerCatches feeds the fuzzer's property checks decisions that are wrong
// in the ways a rewrite could go wrong, so a check that stopped checking would show.
func TestFuzzCheckerCatches(t *testing.T) {
	p := testPolicy(t)
	rewrite := func(out string, param int) *Decision {
		return &Decision{act: ActRewrite, sql: out, epochParam: param}
	}
	for _, c := range []struct {
		in   string
		d    *Decision
		want string
	}{
		{"UPDATE inventory SET quantity = 1 WHERE sku = $1",
			rewrite("UPDATE inventory SET quantity = 1, writer_epoch = $2::bigint WHERE sku = $1 OR inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint", 2),
			"lacks the top-level conjunct"},
		{"UPDATE inventory AS i SET quantity = 1",
			rewrite("UPDATE inventory AS i SET quantity = 1, writer_epoch = $1::bigint WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint", 1),
			"lacks the top-level conjunct i.writer_epoch"},
		{"UPDATE inventory SET quantity = 1",
			rewrite("UPDATE inventory SET quantity = 1 WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint", 1),
			"assigns writer_epoch 0 times"},
		{"UPDATE billing.invoices SET total = 1",
			rewrite("UPDATE billing.invoices SET total = 1, writer_epoch = $1::bigint WHERE invoices.writer_epoch OPERATOR(pg_catalog.<) $1::bigint", 1),
			"OPERATOR(pg_catalog.<=) $1::bigint"},
		{"UPDATE inventory SET quantity = 1 WHERE sku = $1",
			rewrite("UPDATE inventory SET quantity = 1, writer_epoch = $2::bigint WHERE (sku = $1) AND inventory.writer_epoch < $2::bigint", 2),
			"lacks the top-level conjunct inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint"}, // unqualified: resolves through search_path
		{"UPDATE inventory SET quantity = 1 WHERE sku = $1",
			rewrite("UPDATE inventory SET quantity = 1, writer_epoch = $2::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(public.<) $2::bigint", 2),
			"lacks the top-level conjunct inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint"},
		{"UPDATE inventory SET quantity = $1",
			rewrite("UPDATE inventory SET quantity = $1, writer_epoch = $1::bigint WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint", 1),
			"want $2"},
		{"INSERT INTO inventory (sku, quantity) VALUES ('a', 1), ('b', 2)",
			rewrite("INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 1, $1::bigint), ('b', $1::bigint, 2)", 1),
			"position 3 of 3"},
		{"INSERT INTO inventory (sku, quantity) SELECT 'a', 1 UNION SELECT 'b', 2",
			rewrite("INSERT INTO inventory (sku, quantity, writer_epoch) SELECT 'a', 1, $1::bigint UNION SELECT 'b', 2, 3", 1),
			"INSERT SELECT into inventory"},
		{"INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2",
			rewrite("INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 1, $1::bigint) ON CONFLICT (sku) DO UPDATE SET quantity = 2, writer_epoch = $1::bigint", 1),
			"ON CONFLICT DO UPDATE on inventory lacks"},
		{"MERGE INTO inventory t USING s ON t.sku = s.sku WHEN MATCHED AND s.x THEN DELETE WHEN NOT MATCHED THEN INSERT (sku) VALUES (s.sku)",
			rewrite("MERGE INTO inventory t USING s ON t.sku = s.sku WHEN MATCHED AND (s.x OR t.writer_epoch OPERATOR(pg_catalog.<) $1::bigint) THEN DELETE WHEN NOT MATCHED THEN INSERT (sku, writer_epoch) VALUES (s.sku, $1::bigint)", 1),
			"MERGE WHEN MERGE_WHEN_MATCHED on inventory lacks"},
		{"/* keep me */ DELETE FROM inventory",
			rewrite("DELETE FROM inventory WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint", 1),
			`lost the input's token "/* keep me */"`},
		{"DELETE FROM inventory", &Decision{act: ActPass}, "passed a *pg_query.DeleteStmt"},
		{"EXPLAIN ANALYZE DELETE FROM inventory", &Decision{act: ActPass}, "passed a *pg_query.DeleteStmt"},
		{"DELETE FROM inventory WHERE", &Decision{act: ActPass}, "does not parse"},
		{"TRUNCATE staging, inventory", &Decision{act: ActPass}, "passed TRUNCATE"},
		{"DO $$ BEGIN EXECUTE 'DELETE FROM ' || 'inventory'; END $$", &Decision{act: ActPass}, "runs dynamic SQL and has a string naming a protected table"},
		{"DO $$ DECLARE q text := 'DELETE FROM inventory'; BEGIN EXECUTE q; END $$", &Decision{act: ActPass}, "runs dynamic SQL and has a string naming a protected table"},
		{"DO $$ BEGIN IF true THEN UPDATE inventory SET quantity = 0; END IF; END $$", &Decision{act: ActPass}, "in a DO block: passed a *pg_query.UpdateStmt"},
		{"UPDATE inventory SET quantity = 1 WHERE note = 'x'",
			&Decision{act: ActRewrite, epochParam: 1,
				sql:      "UPDATE inventory SET quantity = 1, writer_epoch = $1::bigint WHERE (note = 'x') AND inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint",
				zeroRows: &Classifier{query: "WITH d AS (DELETE FROM inventory RETURNING 1) SELECT max(writer_epoch)::bigint FROM inventory WHERE note = 'y'"}},
			"classification query writes"},
	} {
		problems := strings.Join(checkDecision(p, c.in, c.d), "\n")
		if !strings.Contains(problems, c.want) {
			t.Errorf("%s\n-> %s\nproblems %q, want one containing %q", c.in, outcome(c.d), problems, c.want)
		}
	}
}

// TestRewriteVariants rewrites every seed statement in forms PostgreSQL reads the same
// way — a comment between every two tokens, newlines for spaces, keywords in the
// other case, a trailing semicolon and comment, parameters renumbered upwards — and
// checks each with the fuzzer's properties. A form that changes the decision from
// fenced to refused is reported too: issue 3 asks for these shapes to be fenced.
func TestRewriteVariants(t *testing.T) {
	p := testPolicy(t)
	for _, in := range seedStatements(t) {
		d := Analyze(p, in)
		for name, v := range variants(in) {
			dv := Analyze(p, v)
			if problems := checkDecision(p, v, dv); len(problems) > 0 {
				t.Errorf("%s of\n%s\n=\n%s\ndecision: %s\nproblems:\n  %s", name, in, v, outcome(dv), strings.Join(problems, "\n  "))
			}
			// Refusing a form it fenced (or the reverse) is allowed, if unkind; passing
			// a form of a statement it did not pass is not.
			switch {
			case d.act == dv.act:
			case d.act == ActPass || dv.act == ActPass:
				t.Errorf("%s changes the decision:\n%s\n-> %s\n%s\n-> %s", name, in, outcome(d), v, outcome(dv))
			default:
				t.Logf("%s changes the decision:\n%s\n-> %.200s\n%s\n-> %.200s", name, in, outcome(d), v, outcome(dv))
			}
		}
	}
}

// seedStatements: the fuzzer's seed corpus.
func seedStatements(t *testing.T) []string {
	t.Helper()
	var out []string
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, _, _ := strings.Cut(string(data), goldenSeparator)
		out = append(out, in)
	}
	files, _ = filepath.Glob("testdata/fuzz/FuzzRewrite/*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, lit, ok := strings.Cut(strings.TrimSpace(string(data)), "\nstring(")
		if !ok {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, s)
	}
	return out
}

func variants(sql string) map[string]string {
	scan, err := pgquery.Scan(sql)
	if err != nil || len(scan.Tokens) == 0 {
		return nil
	}
	var toks []string
	var kinds []pg.KeywordKind
	for _, t := range scan.Tokens {
		toks = append(toks, sql[t.Start:t.End])
		kinds = append(kinds, t.KeywordKind)
	}
	out := map[string]string{}
	// A comment between every two tokens; a line comment needs its newline.
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteString("/*c*/")
		}
		b.WriteString(t)
		if strings.HasPrefix(t, "--") {
			b.WriteString("\n")
		}
	}
	out["comments between tokens"] = b.String()
	// Newlines and tabs for single spaces between tokens.
	b.Reset()
	for i, t := range toks {
		if i > 0 {
			b.WriteString("\n\t")
		}
		b.WriteString(t)
	}
	out["newlines between tokens"] = b.String()
	// Keywords in the other case.
	b.Reset()
	at := 0
	for i, t := range scan.Tokens {
		b.WriteString(sql[at:t.Start])
		if kinds[i] != pg.KeywordKind_NO_KEYWORD {
			b.WriteString(swapCase(toks[i]))
		} else {
			b.WriteString(toks[i])
		}
		at = int(t.End)
	}
	b.WriteString(sql[at:])
	out["keywords in the other case"] = b.String()
	// A trailing semicolon and comment.
	if !strings.Contains(sql, ";") {
		out["trailing semicolon"] = sql + " ; -- done"
	}
	// Parameters renumbered: $n becomes $n+7 (a gap below the lowest).
	b.Reset()
	at = 0
	for _, t := range scan.Tokens {
		if t.Token != pg.Token_PARAM {
			continue
		}
		n, err := strconv.Atoi(sql[t.Start+1 : t.End])
		if err != nil || n > 1<<20 {
			return out
		}
		b.WriteString(sql[at:t.Start])
		b.WriteString("$" + strconv.Itoa(n+7))
		at = int(t.End)
	}
	b.WriteString(sql[at:])
	out["parameters renumbered"] = b.String()
	return out
}

func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// mergeDoesNothing: a MERGE whose every clause is DO NOTHING writes no row.
func mergeDoesNothing(s any) bool {
	m, ok := s.(*pg.MergeStmt)
	if !ok {
		return false
	}
	for _, n := range m.MergeWhenClauses {
		if n.GetMergeWhenClause().GetCommandType() != pg.CmdType_CMD_NOTHING {
			return false
		}
	}
	return true
}
