package pgxfence_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
)

// TestGuard: with the database-side guard installed, pgxfence's fenced writes
// carry what the guard recognizes (the marker, the session's setting) and land;
// a write that did not come through the fence is rejected, and so is a fenced
// CopyFrom, whose COPY text pgx writes without the marker.
func TestGuard(t *testing.T) {
	f := newFixture(t)
	pool := f.guardedPool(t, "version: 1\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n")
	ctx := timeout(t, context.Background())
	fresh := sqlfence.WithEpoch(ctx, 7)
	if _, err := pool.Exec(fresh, `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`); err != nil {
		t.Fatalf("fenced write under the guard: %v", err)
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE inventory SET quantity = 2 WHERE sku = 'b'`)
	if err := pool.SendBatch(fresh, b).Close(); err != nil {
		t.Fatalf("fenced batch under the guard: %v", err)
	}
	var pe *pgconn.PgError
	if _, err := f.raw.Exec(ctx, `UPDATE inventory SET quantity = 0`); !errors.As(err, &pe) || pe.Code != "SF001" {
		t.Fatalf("raw write: %v, want the guard's SF001", err)
	}
	if _, err := pool.CopyFrom(fresh, pgx.Identifier{"inventory"}, []string{"sku", "quantity"}, pgx.CopyFromRows([][]any{{"c", 1}})); !errors.As(err, &pe) || pe.Code != "SF001" {
		t.Fatalf("CopyFrom under the guard: %v, want the guard's SF001", err)
	}
	if got := f.state(t, inventoryState); got != "a:1:7 b:2:7" {
		t.Fatalf("data %q", got)
	}

	// Without arguments the epoch goes as a literal; the guard reads the marker, not
	// the epoch's form, and lets it through at int64's largest epoch; a stale epoch
	// changes nothing; the same literal text sent past the fence is rejected.
	f.tr.take()
	const q = `UPDATE inventory SET quantity = 3 WHERE sku = 'a'`
	if _, err := pool.Exec(sqlfence.WithEpoch(ctx, math.MaxInt64), q); err != nil {
		t.Fatalf("literal epoch under the guard: %v", err)
	}
	sent := f.tr.take()
	// The guard's SF001 to CopyFrom had the catalog version read again first (it
	// had not moved: the snapshot stays).
	if len(sent) == 2 && strings.Contains(sent[0], "sqlfence.catalog_version") {
		sent = sent[1:]
	}
	if len(sent) != 1 || !strings.Contains(sent[0], "writer_epoch = 9223372036854775807::bigint") || strings.Contains(sent[0], "$1") {
		t.Fatalf("sent %q", sent)
	}
	if _, err := pool.Exec(sqlfence.WithEpoch(ctx, math.MaxInt64-1), q); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale literal epoch under the guard: %v", err)
	}
	if _, err := f.raw.Exec(ctx, strings.ReplaceAll(sent[0], "9223372036854775807", "8")); !errors.As(err, &pe) || pe.Code != "SF001" {
		t.Fatalf("the literal text past the fence: %v, want the guard's SF001", err)
	}
	if got := f.state(t, inventoryState); got != "a:3:9223372036854775807 b:2:7" {
		t.Fatalf("data %q", got)
	}
}
