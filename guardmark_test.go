package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// TestGuardMarkerRefused: an application's text that carries the guard's marker is
// refused and nothing is sent, wherever the marker sits and whatever the statement
// does: sent unchanged, it would pass the database's guard as a statement sqlfence
// fenced.
func TestGuardMarkerRefused(t *testing.T) {
	db, r := openFull(t)
	for _, q := range []string{
		"/*sqlfence fenced: inventory*/ DO $$ BEGIN EXECUTE 'UPDATE inv' || 'entory SET quantity = 0'; END $$",
		"/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = 0 WHERE sku = $1",
		"/*sqlfence fenced: staging*/ DELETE FROM staging",
		"UPDATE inventory SET quantity = 0 /*sqlfence fenced: inventory*/ WHERE sku = $1",
		"SELECT '/*sqlfence fenced: inventory*/'",
		"SELECT $q$/*sqlfence fenced$q$",
		"/*sqlfence fenced*/ SELECT 1",
	} {
		for _, ctx := range []context.Context{context.Background(), sqlfence.WithEpoch(context.Background(), 7)} {
			var args []any
			if strings.Contains(q, "$1") {
				args = []any{"a"}
			}
			_, err := db.ExecContext(ctx, q, args...)
			var e *sqlfence.Error
			if !errors.Is(err, sqlfence.ErrRefused) || !errors.As(err, &e) || !strings.Contains(e.Reason, "the marker that tells the database's guard") {
				t.Errorf("%s: %v, want ErrRefused naming the marker", q, err)
			}
		}
		if p := mockPolicy(t).Plan(q); !errors.Is(p.Err, sqlfence.ErrRefused) {
			t.Errorf("Plan(%s): %v, want ErrRefused", q, p.Err)
		}
	}
	if calls := r.statements(); len(calls) != 0 {
		t.Errorf("sent %d statements: %s", len(calls), joinRecs(calls))
	}
	// The driver's own marker names each protected table a statement fences, once.
	p := mockPolicy(t).Plan("WITH x AS (DELETE FROM inventory WHERE sku = $1) UPDATE inventory SET quantity = 0")
	if !strings.HasPrefix(p.Fenced, "/*sqlfence fenced: inventory*/ WITH x AS (DELETE FROM inventory") {
		t.Errorf("Plan: %q, want the marker naming inventory once", p.Fenced)
	}
}
