// The context helpers: the epoch (WithEpoch), the deliberate bypass (Unfenced), the
// handler's cancel on a fence (OnFenced), exact accounting and the claim (WithClaim).

package sqlfence

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sqlfence/sqlfence/internal/engine"
)

type epochKey struct{}

type unfencedKey struct{}

// WithEpoch returns a context whose protected writes carry epoch. The epoch is the
// claim's fencing token: it must come from the arbiter that serialises claims (a
// claim's conditional UPDATE … RETURNING lease_epoch, or a sequence), never from a
// clock. Epochs must be > 0; a non-positive epoch is not recorded, so writes under the
// returned context fail with ErrUnfenced rather than write with a meaningless token.
func WithEpoch(ctx context.Context, epoch int64) context.Context {
	if epoch <= 0 {
		return context.WithValue(ctx, epochKey{}, invalidEpoch(epoch))
	}
	return context.WithValue(ctx, epochKey{}, epoch)
}

// invalidEpoch records that WithEpoch was called with a bad value, so the resulting
// error can say so instead of reporting a missing epoch.
type invalidEpoch int64

// EpochFrom reports the epoch WithEpoch put on ctx.
func EpochFrom(ctx context.Context) (int64, bool) {
	e, ok := ctx.Value(epochKey{}).(int64)
	return e, ok
}

// Unfenced marks ctx as deliberately writing protected tables without an epoch: an
// operator's repair, a migration run through the application. It is honoured only
// when the policy says `unfenced: allow`; the reason is required so the bypass is
// visible in logs and errors.
func Unfenced(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, unfencedKey{}, reason)
}

// unfencedReason reports the reason given to Unfenced, if any.
func unfencedReason(ctx context.Context) (string, bool) {
	r, ok := ctx.Value(unfencedKey{}).(string)
	return r, ok
}

type onFencedKey struct{}

// OnFenced returns a context under which a fenced statement also calls cancel with
// the fence error as the cause. Give it the cancel function the handler's lease
// keeper uses when a renewal fails: a superseded handler then stops at its next
// context check instead of burning its remaining runtime on effects nobody wants.
func OnFenced(ctx context.Context, cancel context.CancelCauseFunc) context.Context {
	return context.WithValue(ctx, onFencedKey{}, cancel)
}

// noteFenced cancels the handler's context when err is a fence.
func noteFenced(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, ErrFenced) {
		return err
	}
	if cancel, ok := ctx.Value(onFencedKey{}).(context.CancelCauseFunc); ok {
		cancel(err)
	}
	return err
}

type exactKey struct{}

// WithExactAccounting asks, for the writes under ctx, for exact accounting of bulk
// statements: an UPDATE, DELETE or multi-row upsert that wrote some rows while the
// fence kept others fails with ErrFenced carrying both counts (Error.Affected,
// Error.Fenced). It costs one query after each such write that affected rows, so it
// is off by default; a write that affected no rows is always classified.
func WithExactAccounting(ctx context.Context) context.Context {
	exactAccountingUsed.Store(true)
	return context.WithValue(ctx, exactKey{}, true)
}

// exactAccountingUsed spares every fenced write a walk up its context chain in the
// common program that never asks for exact accounting.
var exactAccountingUsed atomic.Bool

func exactAccounting(ctx context.Context) bool {
	if !exactAccountingUsed.Load() {
		return false
	}
	v, _ := ctx.Value(exactKey{}).(bool)
	return v
}

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
