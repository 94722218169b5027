// The analysis: one SQL text and a policy in, a decision out (pass, rewrite, refuse,
// claim write). Nothing here talks to a database; the driver, Policy.Plan and
// sqlfence check all decide through analyze.

package sqlfence

import (
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
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

// refuse builds the error for a statement sqlfence will not send.
func refuse(t *Table, reason, fix string) *Error {
	e := &Error{Kind: ErrRefused, Reason: reason, Fix: fix}
	if t != nil {
		e.Table = t.QualifiedName.String()
	}
	return e
}

// analyze parses sql and decides what to send. It never panics on input: any shape it
// does not understand ends in a refusal when it concerns a protected table.
func analyze(policy *Policy, sql string) (d *decision) {
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
		return &decision{act: actRefuse, refusal: parseRefusal(sql, scan, err)}
	}
	if e := admit(policy, tree); e != nil {
		return &decision{act: actRefuse, refusal: e}
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
	if e := r.statement(raw.Stmt, lo, hi, true); e != nil {
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

// parseRefusal is the refusal for a statement the parser rejects. The common cause
// with a query builder is ? placeholders — sqlx without the bind type for the driver
// name "sqlfence", or SQL written for MySQL or SQLite — which PostgreSQL reads as an
// operator; the message says so.
func parseRefusal(sql string, scan *pg.ScanResult, err error) *Error {
	e := refuse(nil, "cannot parse the statement: "+err.Error(), "fix the SQL syntax; sqlfence never sends a statement it cannot read")
	for _, t := range scan.Tokens {
		if op := sql[t.Start:t.End]; t.Token == pg.Token_Op && strings.Contains(op, "?") && op != "?|" && op != "?&" {
			e.Reason += "; the statement uses ? placeholders"
			e.Fix = `PostgreSQL numbers parameters $1, $2…; with sqlx call sqlx.BindDriver("sqlfence", sqlx.DOLLAR) ` +
				"(or use github.com/sqlfence/sqlfence/contrib/sqlx), or rebind the query with sqlx.Rebind(sqlx.DOLLAR, query)"
			break
		}
	}
	return e
}
