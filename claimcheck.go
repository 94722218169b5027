// Claim-checked writes: a claim on the context makes every fenced write also check,
// in the same statement, that the claim is still the current one on the arbiter.

package sqlfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Claim is the claim an execution holds: the row of a claim table (a jobs table, a
// claim ledger) whose epoch column holds the current claim's epoch. Put it on the
// context with WithClaim; the claim helpers (package claim) do it for you.
type Claim struct {
	Table       string // the claim table, written as in SQL: "jobs", "app.jobs", `"Jobs"`
	KeyColumn   string // the column that identifies the job; default "id"
	EpochColumn string // the column that holds the current claim's epoch; default "lease_epoch"
	Key         any    // the job's key, sent as a parameter compared with KeyColumn
	Epoch       int64  // the claim's epoch: the fencing token of this execution
}

type claimKey struct{}

// claimCheck is a Claim with its names resolved: what the rewrite inserts.
type claimCheck struct {
	table        QualifiedName
	key, epochCo string
	spec         string // table and columns as SQL text: the claim variant's cache key
	value        any    // the job's key
	err          string // why the Claim cannot be used, refused at every protected write
}

// WithClaim returns a context whose protected writes carry c.Epoch (as WithEpoch) and
// are claim-checked: each one also checks, in the same statement, that row c.Key of
// c.Table still holds c.Epoch in c.EpochColumn, and takes a FOR KEY SHARE lock on
// that row until the transaction ends. A superseded execution is then fenced on
// every protected row from the moment its successor's claim commits — also on rows
// the successor has not written — and a takeover that locks the claim row FOR UPDATE
// (the claim helpers do) waits for the old claim's open transaction.
//
// The check is a scalar subquery that yields the epoch only while the claim is
// current; the rewrite stamps it on every row written, so a superseded INSERT fails
// on the epoch column's NOT NULL constraint and a superseded UPDATE, DELETE or MERGE
// matches no row. Both are reported as ErrFenced. The epoch column of every
// protected table must be NOT NULL (resolve: catalog checks it).
//
// Without a claim on the context, writes are fenced by the row's epoch only.
func WithClaim(ctx context.Context, c Claim) context.Context {
	cc := &claimCheck{value: c.Key}
	if c.KeyColumn == "" {
		c.KeyColumn = "id"
	}
	if c.EpochColumn == "" {
		c.EpochColumn = defaultClaimEpochColumn
	}
	var err error
	if cc.table, err = ParseQualifiedName(c.Table); err != nil {
		cc.err = fmt.Sprintf("the claim's table %q: %v", c.Table, err)
	}
	for _, col := range []struct {
		dst  *string
		what string
		s    string
	}{{&cc.key, "key column", c.KeyColumn}, {&cc.epochCo, "epoch column", c.EpochColumn}} {
		q, err := ParseQualifiedName(col.s)
		switch {
		case err != nil:
			cc.err = fmt.Sprintf("the claim's %s %q: %v", col.what, col.s, err)
		case q.Schema != "":
			cc.err = fmt.Sprintf("the claim's %s %q is not a single identifier", col.what, col.s)
		}
		*col.dst = q.Name
	}
	if c.Key == nil && cc.err == "" {
		cc.err = "the claim has no key"
	}
	cc.spec = cc.tableSQL() + " " + sqlident.Quote(cc.key) + " " + sqlident.Quote(cc.epochCo)
	return context.WithValue(WithEpoch(ctx, c.Epoch), claimKey{}, cc)
}

// ClaimFrom reports the claim WithClaim put on ctx.
func ClaimFrom(ctx context.Context) (Claim, bool) {
	cc, ok := ctx.Value(claimKey{}).(*claimCheck)
	if !ok {
		return Claim{}, false
	}
	e, _ := EpochFrom(ctx)
	return Claim{Table: cc.table.String(), KeyColumn: cc.key, EpochColumn: cc.epochCo, Key: cc.value, Epoch: e}, true
}

func claimFrom(ctx context.Context) *claimCheck {
	cc, _ := ctx.Value(claimKey{}).(*claimCheck)
	return cc
}

// claimAlias names the claim table inside the check, so that its columns can never
// resolve to the outer statement's.
const claimAlias = "sqlfence_claim"

func (cc *claimCheck) tableSQL() string {
	if cc.table.Schema == "" {
		return sqlident.Quote(cc.table.Name)
	}
	return sqlident.Quote(cc.table.Schema) + "." + sqlident.Quote(cc.table.Name)
}

// checkText is the claim check: the epoch while the claim is current, else NULL.
func (cc *claimCheck) checkText(epochParam, keyParam int32) string {
	e := "$" + strconv.Itoa(int(epochParam)) + "::bigint"
	return "(SELECT " + e + " FROM " + cc.tableSQL() + " " + claimAlias +
		" WHERE " + claimAlias + "." + sqlident.Quote(cc.key) + " " + catalogOperator("=") + " $" + strconv.Itoa(int(keyParam)) +
		" AND " + claimAlias + "." + sqlident.Quote(cc.epochCo) + " " + catalogOperator("=") + " " + e + " FOR KEY SHARE)"
}

// checkNode is checkText as the parser builds it.
func (cc *claimCheck) checkNode(epochParam, keyParam int32) *pg.Node {
	col := func(name string) *pg.Node {
		return &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(claimAlias), pg.MakeStrNode(name)}}}}
	}
	eq := func(l, r *pg.Node) *pg.Node {
		return &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{Kind: pg.A_Expr_Kind_AEXPR_OP,
			Name: []*pg.Node{pg.MakeStrNode("pg_catalog"), pg.MakeStrNode("=")}, Lexpr: l, Rexpr: r}}}
	}
	sel := &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: epochNode(epochParam)}}}},
		FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{
			Schemaname: cc.table.Schema, Relname: cc.table.Name, Inh: true, Relpersistence: "p",
			Alias: &pg.Alias{Aliasname: claimAlias},
		}}}},
		WhereClause: &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: []*pg.Node{
			eq(col(cc.key), &pg.Node{Node: &pg.Node_ParamRef{ParamRef: &pg.ParamRef{Number: keyParam}}}),
			eq(col(cc.epochCo), epochNode(epochParam)),
		}}}},
		LockingClause: []*pg.Node{{Node: &pg.Node_LockingClause{LockingClause: &pg.LockingClause{
			Strength: pg.LockClauseStrength_LCS_FORKEYSHARE, WaitPolicy: pg.LockWaitPolicy_LockWaitBlock,
		}}}},
		LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg.SetOperation_SETOP_NONE,
	}
	return &pg.Node{Node: &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXPR_SUBLINK,
		Subselect: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}}}}
}

// lookupText reads the claim row's epoch, for the message of a claim-checked write
// that found its claim superseded. It runs only on that failure path.
func (cc *claimCheck) lookupText() string {
	return "SELECT " + sqlident.Quote(cc.epochCo) + "::bigint FROM " + cc.tableSQL() +
		" WHERE " + sqlident.Quote(cc.key) + " " + catalogOperator("=") + " $1"
}

// notInDatabase explains a claim-checked write the server refused because the claim
// table does not exist in the database it was sent to (SQLSTATE 42P01): the check
// reads the claim row in the write's own statement, so the claim table has to live
// in the database of the protected tables. Any other error gives nil. Nothing was
// written: the statement failed before it ran.
func (cc *claimCheck) notInDatabase(err error, c *call) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" || !strings.Contains(pgErr.Message, cc.table.Name) {
		return nil
	}
	return fmt.Errorf("sqlfence: table %s, epoch %d: the claim check reads the claim table %s, which this database does not have (%w); "+
		"the claim table must be in the database of the protected tables, since each write reads it in the same statement: "+
		"claim the job in a claim.Ledger in this database (the other database keeps delivering the jobs), or move the claim table here (statement: %s)",
		c.d.table(), c.epoch, cc.table, err, abbreviate(c.query, 200))
}

// claimVariant returns the decision for d's statement under a claim: the same
// rewrite with the claim check in every stamp and fence. Variants are made on first
// use and kept with d, one per claim table (a program has a few).
func (d *decision) claimVariant(policy *Policy, query string, cc *claimCheck) *decision {
	m := d.variants.Load()
	if m == nil {
		d.variants.CompareAndSwap(nil, new(sync.Map))
		m = d.variants.Load()
	}
	if v, ok := m.Load(cc.spec); ok {
		return v.(*decision)
	}
	v := analyzeWith(policy, query, cc)
	if v.act == actRefuse && v.refusal != nil {
		v.refusal = v.refusal.forStatement("", 0)
		v.refusal.Reason += " (under the claim on table " + cc.table.String() + ")"
	}
	actual, _ := m.LoadOrStore(cc.spec, v)
	return actual.(*decision)
}
