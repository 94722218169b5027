// The analysis: one SQL text and a policy in, a decision out (pass, rewrite, refuse,
// claim write). Nothing here talks to a database; the driver, Policy.Plan and
// sqlfence check all decide through analyze.

package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/sqlfence/sqlfence/internal/guardmark"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// MaxStatementBytes bounds what reaches the C parser. The parser's stack is bounded by
// the structure of the text (pgtree.Measure), not its size; nothing a job handler
// sends to a protected table needs to be this large.
const MaxStatementBytes = 1 << 20

type Action uint8

const (
	ActPass    Action = iota + 1 // send the application's text unchanged
	ActRewrite                   // send text with the fence inserted, plus the epoch argument
	ActRefuse                    // send nothing
	ActClaim                     // send unchanged, but only from sqlfence's claim helpers
)

// decision is what sqlfence does with one SQL text under one policy. It depends on
// nothing else, which is what makes it cacheable.
type Decision struct {
	act        Action
	sql        string // the text to send for ActRewrite
	epochParam int    // the epoch is parameter $epochParam
	refusal    *Error // for ActRefuse
	tables     []*Table
	zeroRows   *Classifier // how to explain a 0-row result of the top-level write, or nil
	claimTable *ClaimTable // the statement writes a claim table's epoch or status column
	// checked: the rewrite checks the claim it was made for (a variant made by
	// claimVariant); the claim's key is then parameter $epochParam+1.
	checked bool
	// variants holds the claim-checked decisions for this statement, one per claim
	// table (claimVariant), made on first use.
	variants atomic.Pointer[sync.Map] // spec string → *Decision; nil until the first use
	// literal is the text cut at its epoch tokens, for Bound.Literal (literal.go);
	// nil until the first use.
	literal atomic.Pointer[literalForm]
	// fromPlan is the plan a decision by shape was derived from when the plan can give
	// it its literal form (planLiteral); epochAt are then where in sql the fence's
	// epoch tokens "$1" begin.
	fromPlan *shapePlan
	epochAt  []int

	catalog CatalogEffect // how the statement changes what resolve: catalog read

	// older are the decisions for how older servers read the statement, where that
	// differs from the parser's reading (versions.go); reading is the text a
	// decision for such a reading was made for (claimVariant analyses it again).
	older   []olderReading
	reading string

	// resets are the pinned settings the text returns to the session's default, and
	// resetHow the statement that does it first (defaults.go).
	resets   Pinned
	resetHow string
}

// CatalogEffect says when a statement makes the connector read the catalog again
// (resolve: catalog with ddl: allow): after DDL, and at the end of a transaction that
// ran DDL.
type CatalogEffect uint8

const (
	CatalogDDL    CatalogEffect = 1 << iota // the statement changes the catalog
	CatalogTxEnd                            // it ends a transaction (COMMIT, ROLLBACK, PREPARE TRANSACTION, …)
	CatalogTxUndo                           // it rolls back to a savepoint
)

// RereadsCatalog reports whether statements through the driver can change what
// resolve: catalog read: only DDL can, and only under ddl: allow.
func (p *Policy) RereadsCatalog() bool { return p.ResolveCatalog && p.AllowDDL }

// catalogEffectOf classifies a text the allowlist admitted. A DO block may run DDL,
// so it counts as DDL.
func catalogEffectOf(tree *pg.ParseResult) CatalogEffect {
	var eff CatalogEffect
	for _, raw := range tree.Stmts {
		// SELECT … INTO creates a table, and so does EXPLAIN ANALYZE of it or of
		// CREATE TABLE AS, which runs its statement.
		run := raw.Stmt
		if e := run.GetExplainStmt(); e != nil && pgtree.ExplainAnalyze(e) {
			run = e.Query
		}
		if run.GetSelectStmt().GetIntoClause() != nil || run.GetCreateTableAsStmt() != nil {
			eff |= CatalogDDL
			continue
		}
		switch s := raw.Stmt.Node.(type) {
		case *pg.Node_TransactionStmt:
			switch s.TransactionStmt.Kind {
			case pg.TransactionStmtKind_TRANS_STMT_COMMIT, pg.TransactionStmtKind_TRANS_STMT_ROLLBACK,
				pg.TransactionStmtKind_TRANS_STMT_PREPARE, pg.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED,
				pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
				eff |= CatalogTxEnd
			case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
				eff |= CatalogTxUndo
			}
		case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt, *pg.Node_MergeStmt,
			*pg.Node_ExplainStmt, *pg.Node_VariableShowStmt, *pg.Node_ListenStmt, *pg.Node_UnlistenStmt,
			*pg.Node_NotifyStmt, *pg.Node_DiscardStmt, *pg.Node_DeallocateStmt, *pg.Node_LockStmt,
			*pg.Node_FetchStmt, *pg.Node_ClosePortalStmt, *pg.Node_ConstraintsSetStmt, *pg.Node_DeclareCursorStmt,
			*pg.Node_VariableSetStmt, *pg.Node_CopyStmt, *pg.Node_TruncateStmt, *pg.Node_CallStmt:
		default:
			eff |= CatalogDDL
		}
	}
	return eff
}

// table returns the name used in messages about this statement.
func (d *Decision) table() string {
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

// refuse builds the error for a statement sqlfence will not send.
func refuse(code string, t *Table, reason, fix string) *Error {
	e := &Error{Kind: KindRefused, Code: code, Reason: reason, Fix: fix}
	if t != nil {
		e.Table = t.QualifiedName.String()
	}
	return e
}

// Analyze parses sql and decides what to send. It never panics on input: any shape it
// does not understand ends in a refusal when it concerns a protected table.
func Analyze(policy *Policy, sql string) (d *Decision) { return analyzeWith(policy, sql, nil) }

// analyzeWith is analyze for writes checked against the claim cc (nil: none).
func analyzeWith(policy *Policy, sql string, cc *ClaimCheck) *Decision {
	d, _ := analyzeShaped(policy, sql, nil, cc, false)
	return d
}

// analyzeShaped is analyzeWith for sql scanned into scanned already (nil: not yet)
// that, with wantPlan, also returns the plan that decides the texts of the same shape
// (shape.go) when the statement passes or is rewritten; nil otherwise.
func analyzeShaped(policy *Policy, sql string, scanned []pgtree.Token, cc *ClaimCheck, wantPlan bool) (d *Decision, plan *shapePlan) {
	if scanned == nil && len(sql) <= MaxStatementBytes && strings.IndexByte(sql, 0) < 0 {
		scanned, _ = pgtree.ScanTokens(sql, nil) // on an error analyzeText scans again and refuses
	}
	d, plan = analyzeText(policy, sql, scanned, cc, wantPlan)
	if scanned != nil {
		if older := olderReadings(policy, sql, scanned, cc); older != nil {
			// A decision by shape would hold no older readings: every text of this
			// shape has the same keywords, and takes the analysis.
			d.older, plan = older, nil
		}
	}
	return d, plan
}

// analyzeText is analyzeShaped as the parser reads sql, on servers of its version.
func analyzeText(policy *Policy, sql string, scanned []pgtree.Token, cc *ClaimCheck, wantPlan bool) (d *Decision, plan *shapePlan) {
	if len(sql) > MaxStatementBytes {
		return &Decision{act: ActRefuse, refusal: refuse(rulecode.TooLarge, nil,
			fmt.Sprintf("statement is %d bytes, more than the %d sqlfence parses", len(sql), MaxStatementBytes),
			"split the statement, or send it through sqlfence.Unfenced with `unfenced: allow`")}, nil
	}
	if strings.IndexByte(sql, 0) >= 0 {
		// pg_query stops reading at a NUL, and so does the server's protocol: what
		// sqlfence would judge is only a prefix of what the application meant.
		return &Decision{act: ActRefuse, refusal: refuse(rulecode.ParseError, nil,
			"the statement contains a NUL byte, where PostgreSQL and sqlfence's parser stop reading",
			"remove the NUL byte; pass binary data as a bytea parameter")}, nil
	}
	if strings.Contains(sql, guardmark.Forged) {
		return &Decision{act: ActRefuse, refusal: refuse(rulecode.GuardMarker, nil,
			"the statement contains "+guardmark.Forged+", the marker that tells the database's guard (sqlfence guard) that sqlfence fenced the statement",
			"remove it from the statement, comment or literal: sqlfence adds it to the statements it fences")}, nil
	}
	if scanned == nil {
		var err error
		if scanned, err = pgtree.ScanTokens(sql, nil); err != nil {
			return &Decision{act: ActRefuse, refusal: refuse(rulecode.ParseError, nil, "cannot parse the statement: "+err.Error(),
				"fix the SQL syntax; sqlfence never sends a statement it cannot read")}, nil
		}
	}
	r := &rewriter{sql: sql, policy: policy, done: map[proto.Message]bool{}, check: cc}
	if e := r.tokenize(scanned); e != nil {
		return &Decision{act: ActRefuse, refusal: e}, nil
	}
	tree, err := pgtree.ParseTokens(sql, scanned, pgtree.Limit)
	if err != nil {
		return &Decision{act: ActRefuse, refusal: parseRefusal(sql, scanned, err)}, nil
	}
	if e := admit(policy, tree); e != nil {
		return &Decision{act: ActRefuse, refusal: e}, nil
	}
	writes, e := findWrites(policy, tree)
	if e != nil {
		return &Decision{act: ActRefuse, refusal: e}, nil
	}
	claim := claimWrite(policy, tree)
	if len(writes) == 0 {
		resets, how := resetsOf(tree)
		if claim != nil {
			return &Decision{act: ActClaim, claimTable: claim, resets: resets, resetHow: how}, nil
		}
		d = &Decision{act: ActPass, resets: resets, resetHow: how}
		if policy.RereadsCatalog() {
			d.catalog = catalogEffectOf(tree)
		}
		if wantPlan && cc == nil {
			plan = newShapePlan(sql, r.toks, tree, d, nil)
		}
		return d, plan
	}
	if claim != nil {
		return &Decision{act: ActRefuse, refusal: refuse(rulecode.ClaimAndProtected, writes[0].table,
			"the statement writes both a protected table and the claim table "+claim.QualifiedName.String(),
			"claim the job first with the claim helpers, then write under the claim's epoch")}, nil
	}
	if len(tree.Stmts) != 1 {
		return &Decision{act: ActRefuse, refusal: refuse(rulecode.MultiStatement, writes[0].table,
			fmt.Sprintf("a string of %d statements writes a protected table", len(tree.Stmts)),
			"send each statement on its own so each can be fenced")}, nil
	}
	minP, maxP := paramRange(sql, r.toks, tree)
	if minP < 1 {
		return &Decision{act: ActRefuse, refusal: refuse(rulecode.ParamBelowOne, writes[0].table, "the statement uses a parameter numbered below $1",
			"number parameters from $1")}, nil
	}
	r.param = maxP + 1
	raw := tree.Stmts[0]
	lo, hi := r.span(int(raw.StmtLocation), int(raw.StmtLen))
	if e := r.statement(raw.Stmt, lo, hi, true); e != nil {
		return &Decision{act: ActRefuse, refusal: e}, nil
	}
	for _, w := range writes {
		if !r.done[w.node] {
			return &Decision{act: ActRefuse, refusal: refuse(rulecode.UnfenceablePlace, w.table,
				"the statement writes the table in a place sqlfence cannot fence",
				"write the table with a plain INSERT, UPDATE, DELETE or MERGE, or a data-modifying WITH at the top of the statement")}, nil
		}
	}
	if len(r.edits) == 0 {
		// Every write is fenced by an edit; none means the statement writes nothing
		// (a MERGE whose only clause is WHEN NOT MATCHED THEN DO NOTHING).
		return &Decision{act: ActPass}, nil
	}
	out := guardMarker(r.tables, policy.CatalogVersion) + applyEdits(sql, r.toks, r.edits, nil)
	if e := verify(tree, out); e != nil {
		e.Table = writes[0].table.QualifiedName.String()
		return &Decision{act: ActRefuse, refusal: e}, nil
	}
	d = &Decision{act: ActRewrite, sql: out, epochParam: int(r.param), tables: r.tables, zeroRows: r.top, checked: cc != nil}
	if wantPlan && cc == nil {
		plan = newShapePlan(sql, r.toks, tree, d, r.edits)
	}
	return d, plan
}

// guardMarker is the comment the fenced text starts with: it names the protected
// relations the statement fences, so that the guard's statement trigger lets exactly
// those writes of this statement through. A write to a view fires the trigger of the
// table under it.
func guardMarker(tables []*Table, version int64) string {
	names := make([]string, 0, len(tables)+1)
	for _, t := range tables {
		names = append(names, t.Name)
		if t.base != "" {
			names = append(names, t.base)
		}
	}
	return guardmark.CommentAt(names, version)
}

// parseRefusal is the refusal for a statement the parser rejects. The common cause
// with a query builder is ? placeholders — sqlx without the bind type for the driver
// name "sqlfence", or SQL written for MySQL or SQLite — which PostgreSQL reads as an
// operator; the message says so.
func parseRefusal(sql string, toks []pgtree.Token, err error) *Error {
	e := refuse(rulecode.ParseError, nil, "cannot parse the statement: "+err.Error(), "fix the SQL syntax; sqlfence never sends a statement it cannot read")
	if errors.As(err, new(*pgtree.BoundsError)) {
		e.Code = rulecode.TooDeep
	}
	for _, t := range toks {
		if op := sql[t.Start:t.End]; t.Kind == pg.Token_Op && strings.Contains(op, "?") && op != "?|" && op != "?&" {
			e.Code = rulecode.QuestionMarks
			e.Reason += "; the statement uses ? placeholders"
			e.Fix = `PostgreSQL numbers parameters $1, $2…; with sqlx call sqlx.BindDriver("sqlfence", sqlx.DOLLAR) ` +
				"(or use github.com/sqlfence/sqlfence/contrib/sqlx), or rebind the query with sqlx.Rebind(sqlx.DOLLAR, query)"
			break
		}
	}
	return e
}
