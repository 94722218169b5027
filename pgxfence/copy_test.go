package pgxfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
)

// TestCopyFrom: into a protected table every row carries the epoch; into an
// unprotected one the rows pass unchanged; without an epoch nothing is copied.
func TestCopyFrom(t *testing.T) {
	p := policy(t, "")
	for _, fr := range fronts {
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			d, end := fr.open(t, f, p, pgx.QueryExecModeCacheStatement)
			ctx := timeout(t, context.Background())
			rows := [][]any{{"c", 1}, {"d", 2}}
			if _, err := d.CopyFrom(ctx, pgx.Identifier{"inventory"}, []string{"sku", "quantity"}, pgx.CopyFromRows(rows)); !errors.Is(err, sqlfence.ErrUnfenced) {
				t.Fatalf("no epoch: %v", err)
			}
			n, err := d.CopyFrom(sqlfence.WithEpoch(ctx, 7), pgx.Identifier{"public", "inventory"}, []string{"sku", "quantity"}, pgx.CopyFromRows(rows))
			if err != nil || n != 2 {
				t.Fatalf("copy: %d, %v", n, err)
			}
			if _, err := d.CopyFrom(sqlfence.WithEpoch(ctx, 7), pgx.Identifier{"inventory"}, []string{"sku", "quantity", "writer_epoch"}, pgx.CopyFromRows([][]any{{"e", 1, 99}})); !errors.Is(err, sqlfence.ErrRefused) {
				t.Fatalf("copy naming the epoch column: %v", err)
			}
			if n, err := d.CopyFrom(ctx, pgx.Identifier{"audit"}, []string{"sku"}, pgx.CopyFromRows([][]any{{"x"}})); err != nil || n != 1 {
				t.Fatalf("unprotected copy: %d, %v", n, err)
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			if got := f.state(t, inventoryState); got != "a:10:5 b:20:5 c:1:7 d:2:7" {
				t.Fatalf("data %q", got)
			}
			if got := f.state(t, `SELECT string_agg(sku, ',') FROM audit`); got != "x" {
				t.Fatalf("audit %q", got)
			}
		})
	}
}

// TestCopyFromClaim: under a claim the copy holds the claim row; a superseded claim
// copies nothing and reports ErrFenced.
func TestCopyFromClaim(t *testing.T) {
	p := policy(t, "")
	for _, fr := range fronts {
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			d, end := fr.open(t, f, p, pgx.QueryExecModeCacheStatement)
			ctx := timeout(t, context.Background())
			current := sqlfence.WithClaim(ctx, sqlfence.Claim{Table: "jobs", Key: 1, Epoch: 7})
			if n, err := d.CopyFrom(current, pgx.Identifier{"inventory"}, []string{"sku", "quantity"}, pgx.CopyFromRows([][]any{{"c", 1}})); err != nil || n != 1 {
				t.Fatalf("current claim: %d, %v", n, err)
			}
			superseded := sqlfence.WithClaim(ctx, sqlfence.Claim{Table: "jobs", Key: 1, Epoch: 6})
			if _, err := d.CopyFrom(superseded, pgx.Identifier{"inventory"}, []string{"sku", "quantity"}, pgx.CopyFromRows([][]any{{"d", 1}})); !errors.Is(err, sqlfence.ErrFenced) {
				t.Fatalf("superseded claim: %v, want ErrFenced", err)
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			if got := f.state(t, inventoryState); got != "a:10:5 b:20:5 c:1:7" {
				t.Fatalf("data %q", got)
			}
		})
	}
}
