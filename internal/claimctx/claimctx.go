// Package claimctx marks the statements of sqlfence's own claim helpers. It is
// internal so that application code cannot forge the mark: the policy's claim tables
// accept writes to their epoch and status columns only from statements carrying it.
package claimctx

import "context"

type key struct{}

// With marks ctx as running a claim helper's statement.
func With(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// From reports whether ctx carries the mark.
func From(ctx context.Context) bool { v, _ := ctx.Value(key{}).(bool); return v }
