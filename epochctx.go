// The context helpers: the epoch (WithEpoch), the deliberate bypass (Unfenced), the
// handler's cancel on a fence (OnFenced), exact accounting and the claim (WithClaim).

package sqlfence

import (
	"context"
	"errors"
	"sync/atomic"
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
