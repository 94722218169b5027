package inventorydb_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/examples/sqlcpgx/inventorydb"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/pgxfence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open returns a fenced pool and a fenced conn on a fresh database seeded with row
// 'a' at epoch 5, and a raw pool to look at the data.
func open(t *testing.T, ctx context.Context) (*pgxfence.Pool, *pgxfence.Conn, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	schema, err := os.ReadFile("../schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	//sqlfence:ignore SF805 the test's schema and rows are set up on a plain pgx pool, not through sqlfence
	if _, err := raw.Exec(ctx, string(schema)+`;INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5)`); err != nil {
		t.Fatal(err)
	}
	policy, err := sqlfence.LoadPolicy("../sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pgxPool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxfence.New(pgxPool, policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pgxConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgxfence.NewConn(pgxConn, policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return pool, conn, raw
}

// TestGeneratedCode runs sqlc's pgx/v5 code, unchanged, on a *pgxfence.Pool, a
// *pgxfence.Conn and a pgx.Tx begun from each.
func TestGeneratedCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, conn, raw := open(t, ctx)
	poolTx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer poolTx.Rollback(ctx)
	for _, db := range []inventorydb.DBTX{pool, conn, poolTx} {
		q := inventorydb.New(db)
		stale := sqlfence.WithEpoch(ctx, 3)
		if _, err := q.ShipItem(stale, inventorydb.ShipItemParams{Sku: "a", Quantity: 1}); !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("%T stale ShipItem: %v, want ErrFenced", db, err)
		}
		if _, err := q.ShipItem(ctx, inventorydb.ShipItemParams{Sku: "a", Quantity: 1}); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("%T ShipItem without an epoch: %v, want ErrUnfenced", db, err)
		}
	}
	if err := poolTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	fresh := sqlfence.WithEpoch(ctx, 7)
	q := inventorydb.New(pool)
	if n, err := q.ShipItem(fresh, inventorydb.ShipItemParams{Sku: "a", Quantity: 1}); err != nil || n != 1 {
		t.Fatalf("ShipItem: %d, %v", n, err)
	}
	item, err := q.UpsertItem(sqlfence.WithEpoch(ctx, 8), inventorydb.UpsertItemParams{Sku: "a", Quantity: 50})
	if err != nil || item.Quantity != 50 || item.WriterEpoch != 8 {
		t.Fatalf("UpsertItem: %+v, %v", item, err)
	}
	if _, err := q.UpsertItem(sqlfence.WithEpoch(ctx, 6), inventorydb.UpsertItemParams{Sku: "a", Quantity: 1}); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale UpsertItem: %v, want ErrFenced", err)
	}

	tx, err := conn.Begin(fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	qtx := inventorydb.New(conn).WithTx(tx)
	if n, err := qtx.CopyItems(sqlfence.WithEpoch(ctx, 6), []inventorydb.CopyItemsParams{{Sku: "b", Quantity: 1}, {Sku: "c", Quantity: 2}}); err != nil || n != 2 {
		t.Fatalf("CopyItems: %d, %v", n, err)
	}
	var errs []error
	qtx.ShipItems(fresh, []inventorydb.ShipItemsParams{{Sku: "a", Quantity: 1}, {Sku: "b", Quantity: 1}}).Exec(func(_ int, err error) {
		errs = append(errs, err)
	})
	if len(errs) != 2 || !errors.Is(errs[0], sqlfence.ErrFenced) || errs[1] != nil {
		t.Fatalf("ShipItems at epoch 7: %v, want ErrFenced for a (written at 8), nil for b (copied at 6)", errs)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var state string
	if err := raw.QueryRow(ctx, `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "a:50:8 b:0:7 c:2:6" {
		t.Fatalf("data %q", state)
	}
}
