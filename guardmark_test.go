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

// TestNULByteRefused: a text with a NUL byte is refused, by shape or not: the parser
// (and the server) stop reading at it, so a fence judged on the prefix would not be a
// judgement of the text.
func TestNULByteRefused(t *testing.T) {
	p := mockPolicy(t)
	for _, q := range []string{
		"SELECT 1\x00; DELETE FROM inventory",
		"\x00 DELETE FROM inventory",
		"UPDATE inventory SET quantity = 1 WHERE sku = 'a\x00'",
	} {
		if e := p.Plan(q).Err; !errors.Is(e, sqlfence.ErrRefused) || !strings.Contains(e.Error(), "NUL byte") {
			t.Errorf("Plan(%q): %v, want a refusal naming the NUL byte", q, e)
		}
	}
	db, _ := openFull(t)
	for _, q := range []string{"UPDATE inventory SET quantity = 1 WHERE sku = 'a'", "UPDATE inventory SET quantity = 1 WHERE sku = 'b\x00'"} {
		_, err := db.ExecContext(sqlfence.WithEpoch(context.Background(), 7), q)
		if strings.Contains(q, "\x00") != errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%q: %v", q, err)
		}
	}
}
