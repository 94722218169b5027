package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"google.golang.org/protobuf/proto"
)

// maxSQLFileBytes bounds what is read; what reaches the C parser is also bounded in
// shape (pgtree.Bounds, the driver's own bounds), since a pathological file can
// exhaust the parser's stack and kill the process.
const maxSQLFileBytes = 64 << 20

// sqlToken is a lexical token of a file, comments included.
type sqlToken struct {
	start, end int
	tok        pg.Token
}

func isComment(t pg.Token) bool { return t == pg.Token_SQL_COMMENT || t == pg.Token_C_COMMENT }

// checkSQLFile lints one SQL file, which runs outside the driver: every write to a
// protected table in it must be fenced by hand.
func checkSQLFile(path string, src []byte, pol *sqlfence.Policy, res *checkResult) {
	ln := newLines(src)
	fileErr := func(off int, msg string) {
		e := fileError{File: path, Message: msg}
		if off >= 0 {
			e.Line, e.Column = ln.pos(off)
		}
		res.Errors = append(res.Errors, e)
	}
	if len(src) > maxSQLFileBytes {
		fileErr(-1, fmt.Sprintf("file is %d bytes, more than the %d sqlfence check reads", len(src), maxSQLFileBytes))
		return
	}
	if !utf8.Valid(src) {
		fileErr(-1, "file is not valid UTF-8")
		return
	}
	text := string(src)
	scan, err := pg.Scan(text)
	if err != nil {
		fileErr(-1, "cannot read the SQL: "+err.Error())
		return
	}
	toks := make([]sqlToken, len(scan.Tokens))
	for i, t := range scan.Tokens {
		toks[i] = sqlToken{int(t.Start), int(t.End), t.Token}
	}
	if off, msg := pgtree.Bounds(scan.Tokens); msg != "" {
		fileErr(off, msg+"; sqlfence check does not parse it, because such input can crash the parser")
		return
	}
	tree, err := pg.Parse(text)
	if err != nil {
		var pe *pgparser.Error
		if errors.As(err, &pe) && pe.Cursorpos > 0 {
			fileErr(runeOffset(text, pe.Cursorpos-1), pe.Message)
		} else {
			fileErr(-1, err.Error())
		}
		return
	}

	// Suppressions: each applies to the first token after it that is not a comment.
	var code []sqlToken // tokens without comments
	sups := map[int][]*suppression{}
	var all []*suppression
	var pending []*suppression
	for _, t := range toks {
		if isComment(t.tok) {
			if reason, ok := parseIgnore(text[t.start:t.end]); ok {
				s := &suppression{file: path, reason: reason}
				s.line, s.col = ln.pos(t.start)
				s.endLine, s.endCol = ln.pos(t.end)
				pending = append(pending, s)
				all = append(all, s)
			}
			continue
		}
		if len(pending) > 0 {
			sups[t.start] = append(sups[t.start], pending...)
			pending = nil
		}
		code = append(code, t)
	}

	// A statement after SELECT sqlfence.override('<reason>') in the same transaction
	// runs under the guard's operator override: the reason is given and logged, so it
	// counts as a suppression (until COMMIT or ROLLBACK, or the end of the file).
	var override *suppression
	for _, raw := range tree.Stmts {
		if reason, ok := overrideCall(raw.Stmt); ok {
			override = &suppression{file: path, reason: "under sqlfence.override: " + reason, used: true}
			override.line, _ = ln.pos(int(raw.StmtLocation))
		} else if endsTransaction(raw.Stmt) {
			override = nil
		}
		loc := int(raw.StmtLocation)
		end := len(text)
		if raw.StmtLen > 0 {
			end = loc + int(raw.StmtLen)
		}
		// The statement's own tokens: from its first token that is not a comment to
		// its last one that is not a semicolon.
		lo, _ := slices.BinarySearchFunc(code, loc, func(t sqlToken, p int) int { return t.start - p })
		hi := lo
		for hi < len(code) && code[hi].start < end {
			hi++
		}
		for hi > lo && code[hi-1].tok == pg.Token_ASCII_59 {
			hi--
		}
		if lo >= hi || raw.Stmt == nil {
			continue
		}
		res.Statements++
		start, stop := code[lo].start, code[hi-1].end
		f, bad := lintStatement(pol, raw.Stmt, text[loc:end])
		if !bad {
			continue
		}
		f.File = path
		f.Line, f.Column = ln.pos(start)
		f.EndLine, f.EndColumn = ln.pos(stop)
		f.Statement = excerpt(text[start:stop])
		var sup *suppression
		if s := sups[start]; len(s) > 0 {
			sup = s[0]
			for _, other := range s[1:] {
				other.used = true
				if sup.reason == "" {
					sup = other
				}
			}
		}
		if override != nil && (sup == nil || sup.reason == "") {
			if sup != nil {
				sup.used = true
			}
			sup = override
		}
		report(res, f, sup)
	}
	settle(res, all)
}

// overrideCall recognises SELECT sqlfence.override('<reason>') and returns the
// reason, when it is one the function accepts.
func overrideCall(n *pg.Node) (string, bool) {
	sel := n.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || len(sel.FromClause) > 0 {
		return "", false
	}
	fc := sel.TargetList[0].GetResTarget().GetVal().GetFuncCall()
	if fc == nil || len(fc.Funcname) != 2 || len(fc.Args) != 1 ||
		fc.Funcname[0].GetString_().GetSval() != "sqlfence" || fc.Funcname[1].GetString_().GetSval() != "override" {
		return "", false
	}
	reason := strings.TrimSpace(fc.Args[0].GetAConst().GetSval().GetSval())
	return reason, utf8.RuneCountInString(reason) >= 8
}

func endsTransaction(n *pg.Node) bool {
	t := n.GetTransactionStmt()
	if t == nil {
		return false
	}
	switch t.Kind {
	case pg.TransactionStmtKind_TRANS_STMT_COMMIT, pg.TransactionStmtKind_TRANS_STMT_ROLLBACK,
		pg.TransactionStmtKind_TRANS_STMT_PREPARE, pg.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED,
		pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
		return true
	}
	return false
}

// runeOffset converts a 0-based character index (PostgreSQL's cursor positions count
// characters) into a byte offset.
func runeOffset(s string, chars int) int {
	n := 0
	for i := range s {
		if n == chars {
			return i
		}
		n++
	}
	return len(s)
}

// lintStatement decides whether one statement of a SQL file is a finding. stmtText
// is the statement's text, for the driver's own verdict (Policy.Plan).
func lintStatement(pol *sqlfence.Policy, stmt *pg.Node, stmtText string) (finding, bool) {
	plan := pol.Plan(stmtText)
	writes, opaque := protectedWrites(pol, stmt)
	if len(writes) == 0 {
		if plan.Err == nil {
			return finding{}, false
		}
		table, msg := refusal(plan.Err)
		return finding{Rule: "unfenceable", Table: table, Message: "cannot be fenced: " + msg}, true
	}
	var problems []string
	var first *write
	for i := range writes {
		w := &writes[i]
		if p := w.handFenced(); len(p) > 0 {
			if first == nil {
				first = w
			}
			problems = append(problems, p...)
		}
	}
	if first == nil {
		if opaque == "" {
			return finding{}, false // every write is fenced by hand
		}
		msg := opaque
		if plan.Err != nil {
			_, msg = refusal(plan.Err)
		}
		return finding{Rule: "unfenceable", Table: writes[0].table.QualifiedName.String(), Message: "cannot be fenced: " + msg}, true
	}
	w := first
	col := quoteIdent(w.table.EpochColumn)
	op := w.table.Mode.Operator()
	var b strings.Builder
	fmt.Fprintf(&b, "%s of protected table %s bypasses the fence: %s (%s). ", w.kind, w.table.QualifiedName, w.harm(), strings.Join(dedupe(problems), "; "))
	if plan.Err != nil {
		if _, msg := refusal(plan.Err); !strings.Contains(msg, "assigns the epoch column") {
			fmt.Fprintf(&b, "The driver would refuse it too: %s. ", msg)
		}
	}
	b.WriteString("Fix: ")
	switch w.kind {
	case "DELETE":
		fmt.Fprintf(&b, "run it through the driver under an epoch, fence it by hand (WHERE … AND %s %s <epoch>), or add `-- sqlfence:ignore <reason>` before it", col, op)
	case "INSERT":
		fmt.Fprintf(&b, "run it through the driver under an epoch, give every row an epoch (name %s in the column list", col)
		if w.upsert {
			fmt.Fprintf(&b, "; DO UPDATE SET … %[1]s = excluded.%[1]s WHERE … AND %[2]s.%[1]s %[3]s excluded.%[1]s", col, quoteIdent(w.qual), op)
		}
		b.WriteString("), or add `-- sqlfence:ignore <reason>` before it")
	default:
		fmt.Fprintf(&b, "run it through the driver under an epoch, fence it by hand (SET … %[1]s = <epoch> WHERE … AND %[1]s %[2]s <epoch>), or add `-- sqlfence:ignore <reason>` before it", col, op)
	}
	return finding{Rule: "unfenced-write", Table: w.table.QualifiedName.String(), Message: b.String()}, true
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// write is one write to a protected table somewhere in a statement.
type write struct {
	kind      string // UPDATE, DELETE, INSERT, MERGE
	table     *sqlfence.Table
	ambiguous bool
	rv        *pg.RangeVar
	qual      string // how the statement refers to the target: its alias or name
	node      proto.Message
	upsert    bool // INSERT … ON CONFLICT DO UPDATE
	weak      bool // compares with <= although the table is strict
}

func (w *write) harm() string {
	switch w.kind {
	case "DELETE":
		return "outside the driver it deletes rows whatever epoch they hold"
	case "INSERT":
		if w.upsert {
			return "outside the driver it inserts rows without an epoch and overwrites conflicting rows whatever epoch they hold"
		}
		return "outside the driver it inserts rows that carry no epoch"
	case "MERGE":
		return "outside the driver it changes matched rows whatever epoch they hold"
	}
	return "outside the driver it overwrites rows whatever epoch they hold"
}

// protectedWrites lists the writes to protected tables anywhere in a statement, and
// says why the statement is opaque when a write sits where no epoch can reach (a rule
// or function body) or it calls a function the policy lists.
func protectedWrites(pol *sqlfence.Policy, stmt *pg.Node) (writes []write, opaque string) {
	var visit func(inBody bool) func(m protoreflect.Message) bool
	visit = func(inBody bool) func(m protoreflect.Message) bool {
		return func(m protoreflect.Message) bool {
			var (
				rv   *pg.RangeVar
				kind string
			)
			switch s := m.Interface().(type) {
			case *pg.UpdateStmt:
				rv, kind = s.Relation, "UPDATE"
			case *pg.DeleteStmt:
				rv, kind = s.Relation, "DELETE"
			case *pg.InsertStmt:
				rv, kind = s.Relation, "INSERT"
			case *pg.MergeStmt:
				rv, kind = s.Relation, "MERGE"
			case *pg.ExplainStmt:
				return pgtree.ExplainAnalyze(s) // plain EXPLAIN plans the write without running it
			case *pg.RuleStmt, *pg.CreateFunctionStmt:
				if !inBody {
					// A body's writes run later, inside the database: walk it as such.
					pgtree.Walk(m, visit(true))
					return false
				}
			case *pg.FuncCall:
				if listedFunction(pol, s.Funcname) && opaque == "" {
					opaque = "it calls a function the policy lists as writing protected tables"
				}
			}
			if rv != nil {
				if t, ambiguous := pol.Match(rv.Schemaname, rv.Relname); t != nil {
					if inBody && opaque == "" {
						opaque = "a rule or function body that writes a protected table runs without the fence"
					}
					qual := rv.Relname
					if rv.Alias != nil && rv.Alias.Aliasname != "" {
						qual = rv.Alias.Aliasname
					}
					writes = append(writes, write{kind: kind, table: t, ambiguous: ambiguous, rv: rv, qual: qual, node: m.Interface()})
				}
			}
			return true
		}
	}
	pgtree.Walk(stmt.ProtoReflect(), visit(false))
	return writes, opaque
}

func listedFunction(pol *sqlfence.Policy, name []*pg.Node) bool {
	schema, fn := pgtree.FuncName(name)
	return fn != "" && pol.MatchFunction(schema, fn)
}

// handFenced checks the write against the hand-fencing rule and returns what is
// missing; nil means it is fenced.
func (w *write) handFenced() []string {
	t := w.table
	col := quoteIdent(t.EpochColumn)
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
	col := quoteIdent(w.table.EpochColumn)
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
	col := quoteIdent(w.table.EpochColumn)
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
