package engine

import (
	"fmt"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// The claim-checked variant of FuzzRewrite's properties: under a claim, every stamp
// is the claim check instead of the bare epoch, and every fence compares with it
// (stale: row) or requires it to be non-NULL (stale: claim). The check is read here
// from its parse tree, independently of claimcheck.go.

// fuzzClaim is the claim a claim-checked decision was made for.
type fuzzClaim struct{ table, key, epoch string }

// fuzzClaims are the claims FuzzRewrite also decides every input under: the policy as
// it is (stale: row) and with every table under stale: claim.
func fuzzClaims(p *Policy) (cc *ClaimCheck, cl *fuzzClaim, staleClaim *Policy) {
	pc := *p
	pc.Tables = append([]Table(nil), p.Tables...)
	for i := range pc.Tables {
		pc.Tables[i].Stale = StaleClaim
	}
	pc.tables = nil
	cc = NewClaimCheck("jobs", "id", "lease_epoch", int64(1))
	return cc, &fuzzClaim{table: "jobs", key: "id", epoch: "lease_epoch"}, &pc
}

// checkClaimVariant checks the decision for sql under the claim against the fuzzer's
// properties, and that a claim never turns a pass into anything else or anything
// into a pass.
func checkClaimVariant(p *Policy, sql string, plain *Decision, cc *ClaimCheck, cl *fuzzClaim) []string {
	d := analyzeWith(p, sql, cc)
	problems := checkDecisionUnder(p, sql, d, cl)
	if (plain.act == ActPass) != (d.act == ActPass) {
		problems = append(problems, fmt.Sprintf("without a claim: %s; under the claim: %s", outcome(plain), outcome(d)))
	}
	return problems
}

// isStamp: the value written into the epoch column — the epoch, or under a claim
// the claim check.
func (c *fenceChecker) isStamp(n *pg.Node) bool {
	if c.claim == nil {
		return c.isEpoch(n)
	}
	return c.isClaimCheck(n)
}

// isClaimCheck: n is exactly
//
//	(SELECT $e::bigint FROM <table> sqlfence_claim
//	 WHERE sqlfence_claim.<key> OPERATOR(pg_catalog.=) $k
//	   AND sqlfence_claim.<epoch> OPERATOR(pg_catalog.=) $e::bigint FOR KEY SHARE)
//
// with $e the epoch parameter and $k the next one.
func (c *fenceChecker) isClaimCheck(n *pg.Node) bool {
	sl := n.GetSubLink()
	if sl == nil || sl.SubLinkType != pg.SubLinkType_EXPR_SUBLINK || sl.Testexpr != nil || len(sl.OperName) > 0 {
		return false
	}
	s := sl.Subselect.GetSelectStmt()
	if s == nil || s.Op != pg.SetOperation_SETOP_NONE || s.WithClause != nil || len(s.DistinctClause) > 0 || s.IntoClause != nil ||
		len(s.GroupClause) > 0 || s.HavingClause != nil || len(s.WindowClause) > 0 || len(s.ValuesLists) > 0 ||
		len(s.SortClause) > 0 || s.LimitCount != nil || s.LimitOffset != nil || len(s.TargetList) != 1 || len(s.FromClause) != 1 {
		return false
	}
	if rt := s.TargetList[0].GetResTarget(); rt == nil || rt.Name != "" || len(rt.Indirection) > 0 || !c.isEpoch(rt.Val) {
		return false
	}
	rv := s.FromClause[0].GetRangeVar()
	if rv == nil || rv.Relname != c.claim.table || rv.Schemaname != "" || rv.Catalogname != "" || !rv.Inh ||
		rv.Alias.GetAliasname() != "sqlfence_claim" || len(rv.Alias.GetColnames()) > 0 {
		return false
	}
	and := s.WhereClause.GetBoolExpr()
	if and == nil || and.Boolop != pg.BoolExprType_AND_EXPR || len(and.Args) != 2 ||
		!claimEquals(and.Args[0], c.claim.key, func(n *pg.Node) bool { return n.GetParamRef() != nil && n.GetParamRef().Number == c.param+1 }) ||
		!claimEquals(and.Args[1], c.claim.epoch, c.isEpoch) {
		return false
	}
	if len(s.LockingClause) != 1 {
		return false
	}
	lc := s.LockingClause[0].GetLockingClause()
	return lc != nil && lc.Strength == pg.LockClauseStrength_LCS_FORKEYSHARE && lc.WaitPolicy == pg.LockWaitPolicy_LockWaitBlock && len(lc.LockedRels) == 0
}

// claimEquals: n is `sqlfence_claim.<col> OPERATOR(pg_catalog.=) <rhs>`.
func claimEquals(n *pg.Node, col string, rhs func(*pg.Node) bool) bool {
	e := n.GetAExpr()
	if e == nil || e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(e.Name) != 2 ||
		e.Name[0].GetString_().GetSval() != "pg_catalog" || e.Name[1].GetString_().GetSval() != "=" || !rhs(e.Rexpr) {
		return false
	}
	f := e.Lexpr.GetColumnRef().GetFields()
	return len(f) == 2 && f[0].GetString_().GetSval() == "sqlfence_claim" && f[1].GetString_().GetSval() == col
}

// claimFenced: under stale: claim the fence is `<claim check> IS NOT NULL`, a
// top-level conjunct of cond.
func (c *fenceChecker) claimFenced(t *Table, what string, cond *pg.Node) {
	for _, n := range conjuncts(cond) {
		if nt := n.GetNullTest(); nt != nil && nt.Nulltesttype == pg.NullTestType_IS_NOT_NULL && !nt.Argisrow && c.isClaimCheck(nt.Arg) {
			return
		}
	}
	c.errorf("%s on %s (stale: claim) lacks the top-level conjunct <claim check> IS NOT NULL", what, t.QualifiedName)
}

// TestFuzzClaimCheckerCatches feeds the claim-checked properties decisions that are
// wrong in the ways a claim-checked rewrite could go wrong.
func TestFuzzClaimCheckerCatches(t *testing.T) {
	p := testPolicy(t)
	_, cl, pc := fuzzClaims(p)
	check := func(e, k int, lock string) string {
		return fmt.Sprintf("(SELECT $%[1]d::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $%[2]d AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $%[1]d::bigint %[3]s)", e, k, lock)
	}
	good := check(1, 2, "FOR KEY SHARE")
	for _, c := range []struct {
		p        *Policy
		in, out  string
		unmarked bool
		want     string
	}{
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + good + " WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, false, ""},
		{pc, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + good + " WHERE " + good + " IS NOT NULL", false, ""},
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = $1::bigint WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, false,
			"assigns writer_epoch something other than"},
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + good + " WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint", false,
			"lacks the top-level conjunct"},
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + check(1, 2, "FOR SHARE") + " WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, false,
			"assigns writer_epoch something other than"},
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + check(1, 1, "FOR KEY SHARE") + " WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, false,
			"assigns writer_epoch something other than"},
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + strings.Replace(good, "FROM jobs", "FROM staging", 1) + " WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, false,
			"assigns writer_epoch something other than"},
		{p, "DELETE FROM inventory", "DELETE FROM inventory WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + strings.Replace(good, " AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint", "", 1), false,
			"lacks the top-level conjunct"},
		{pc, "DELETE FROM inventory", "DELETE FROM inventory WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, false,
			"IS NOT NULL"},
		{pc, "DELETE FROM inventory", "DELETE FROM inventory WHERE " + good + " IS NULL", false,
			"IS NOT NULL"},
		{p, "INSERT INTO inventory (sku) VALUES ('a')", "INSERT INTO inventory (sku, writer_epoch) VALUES ('a', $1::bigint)", false,
			"the row does not carry"},
		{p, "UPDATE inventory SET quantity = 1", "UPDATE inventory SET quantity = 1, writer_epoch = " + good + " WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) " + good, true,
			"decision checks a claim: false"},
	} {
		d := &Decision{act: ActRewrite, sql: c.out, epochParam: 1, checked: !c.unmarked}
		problems := strings.Join(checkDecisionUnder(c.p, c.in, d, cl), "\n")
		if c.want == "" && problems != "" || !strings.Contains(problems, c.want) {
			t.Errorf("%s\n-> %s\nproblems %q, want one containing %q", c.in, c.out, problems, c.want)
		}
	}
}
