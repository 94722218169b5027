package inventorydb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/examples/sqlc/inventorydb"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const seed = `INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5)`

func open(t *testing.T) (*sql.DB, *sql.DB) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	schema, err := os.ReadFile("../schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{string(schema), seed} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlfence", dsn+sep+"sqlfence_policy=../sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, raw
}

func row(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var s string
	if err := raw.QueryRow(`SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGenerated runs the generated queries through sqlfence with a stale epoch (3,
// below the stored 5), a fresh one (7) and none.
func TestGenerated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name         string
		call         func(ctx context.Context, q *inventorydb.Queries) error
		stale, fresh string
	}{
		{"ShipItem :execrows", func(ctx context.Context, q *inventorydb.Queries) error {
			n, err := q.ShipItem(ctx, inventorydb.ShipItemParams{Sku: "a", Quantity: 3})
			if err == nil && n != 1 {
				t.Errorf("%d rows", n)
			}
			return err
		}, "a:10:5", "a:7:7"},
		{"UpsertItem :one", func(ctx context.Context, q *inventorydb.Queries) error {
			it, err := q.UpsertItem(ctx, inventorydb.UpsertItemParams{Sku: "a", Quantity: 4})
			if err == nil && it.WriterEpoch != 7 {
				t.Errorf("returned %+v", it)
			}
			return err
		}, "a:10:5", "a:4:7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, raw := open(t)
			q := inventorydb.New(db)
			if err := c.call(sqlfence.WithEpoch(ctx, 3), q); !errors.Is(err, sqlfence.ErrFenced) {
				t.Fatalf("stale: err = %v, want ErrFenced", err)
			}
			if err := c.call(ctx, q); !errors.Is(err, sqlfence.ErrUnfenced) {
				t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
			}
			if got := row(t, raw); got != c.stale {
				t.Fatalf("after stale and unfenced calls: %q", got)
			}
			// In a transaction, as sqlc's WithTx is used.
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.call(sqlfence.WithEpoch(ctx, 7), q.WithTx(tx)); err != nil {
				t.Fatalf("fresh: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := row(t, raw); got != c.fresh {
				t.Fatalf("after the fresh call: %q, want %q", got, c.fresh)
			}
		})
	}
}

// The sqlc snippet of docs/orms-and-queues.md (compiled, not run: it needs a server).
func Example() {
	ctx := context.Background()
	db, err := sql.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
	if err != nil {
		panic(err)
	}
	q := inventorydb.New(db) // sqlc's generated code, unchanged
	_, err = q.ShipItem(sqlfence.WithEpoch(ctx, 7), inventorydb.ShipItemParams{Sku: "widget", Quantity: 3})
	if errors.Is(err, sqlfence.ErrFenced) {
		return // superseded: stop the handler, do not retry
	}
}
