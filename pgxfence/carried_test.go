package pgxfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
)

// TestCarriedPgx: with a guard that fences the server's writes, a statement whose
// trigger writes a protected table goes out with the epoch carried, through every
// entry point of the pool; a stale epoch is fenced by the guard and reported as
// ErrFenced with the rule code (a batch's Close too, not the server's bare error), no
// epoch is refused before sending, and nothing is written either way; a fresh epoch
// applies and stamps the row.
func TestCarriedPgx(t *testing.T) {
	f := newFixture(t)
	pool := f.guardedPool(t, "version: 1\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n    mode: repeatable\n", restockDDL)
	ctx := timeout(t, context.Background())
	before := f.state(t, inventoryState)
	for _, e := range entries {
		if e.name == "CopyFrom" {
			continue // COPY carries no epoch: refused by sqlfence or the guard (below)
		}
		if err := e.run(ctx, pool); !refusedAs(err, "SF201") {
			t.Errorf("%s with no epoch: %v, want SF201", e.name, err)
		}
		err := e.run(sqlfence.WithEpoch(ctx, 3), pool)
		var se *sqlfence.Error
		if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &se) || se.Code != "SF101" || se.StoredEpoch != 5 {
			t.Errorf("%s with a stale epoch: %v, want ErrFenced SF101 naming the stored epoch 5", e.name, err)
		}
		if got := f.state(t, inventoryState); got != before {
			t.Fatalf("%s: inventory %q, want %q", e.name, got, before)
		}
	}
	if err := entries[0].run(sqlfence.WithEpoch(ctx, 9), pool); err != nil {
		t.Fatalf("fresh epoch: %v", err)
	}
	if got := f.state(t, inventoryState); got != "a:0:9 b:0:9" {
		t.Fatalf("after the fresh write: inventory %q, want every row at 0 stamped 9", got)
	}
	if _, err := pool.CopyFrom(sqlfence.WithEpoch(ctx, 3), pgx.Identifier{"audit"}, []string{"sku"}, pgx.CopyFromRows([][]any{{"x"}})); err == nil {
		t.Fatal("COPY firing the trigger ran")
	}
	if got := f.state(t, inventoryState); got != "a:0:9 b:0:9" {
		t.Fatalf("after COPY: inventory %q", got)
	}
}
