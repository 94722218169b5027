// Claim-checked writes, the context's half: a claim on the context makes every fenced
// write also check, in the same statement, that the claim is still the current one on
// the arbiter (the check itself: internal/engine/claimcheck.go).

package sqlfence

import (
	"context"

	"github.com/sqlfence/sqlfence/internal/engine"
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
	if c.KeyColumn == "" {
		c.KeyColumn = "id"
	}
	if c.EpochColumn == "" {
		c.EpochColumn = defaultClaimEpochColumn
	}
	return context.WithValue(WithEpoch(ctx, c.Epoch), claimKey{}, engine.NewClaimCheck(c.Table, c.KeyColumn, c.EpochColumn, c.Key))
}

// ClaimFrom reports the claim WithClaim put on ctx.
func ClaimFrom(ctx context.Context) (Claim, bool) {
	cc := claimFrom(ctx)
	if cc == nil {
		return Claim{}, false
	}
	e, _ := EpochFrom(ctx)
	return Claim{Table: cc.Table().String(), KeyColumn: cc.KeyColumn(), EpochColumn: cc.EpochColumn(), Key: cc.Key(), Epoch: e}, true
}

func claimFrom(ctx context.Context) *engine.ClaimCheck {
	cc, _ := ctx.Value(claimKey{}).(*engine.ClaimCheck)
	return cc
}
