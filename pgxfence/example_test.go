package pgxfence_test

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// The snippets of docs/pgx.md ("With pgx directly"), compiled here.

func Example() {
	ctx := context.Background()
	policy, err := sqlfence.LoadPolicy("sqlfence.yaml")
	if err != nil {
		return
	}
	pgxPool, err := pgxpool.New(ctx, "postgres://app@db/app")
	if err != nil {
		return
	}
	pool, err := pgxfence.New(pgxPool, policy)
	if err != nil {
		return
	}
	defer pool.Close()

	ctx = sqlfence.WithEpoch(ctx, 42) // the claim's epoch
	_, err = pool.Exec(ctx, `UPDATE inventory SET quantity = $1 WHERE sku = $2`, 9, "a")
	if errors.Is(err, sqlfence.ErrFenced) {
		return // superseded: stop the handler, do not retry
	}
}

// Open takes the DSN the registered driver takes: one DSN serves both fronts, with
// the guard installed too.
func ExampleOpen() {
	ctx := context.Background()
	pool, err := pgxfence.Open(ctx, "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
	if err != nil {
		return // no policy, a broken one, an unknown sqlfence_* parameter, a bad DSN
	}
	defer pool.Close()

	// Over a pool configured beyond what a DSN holds (a tracer, AfterConnect):
	cfg, policy, err := pgxfence.ParseConfig("postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
	if err != nil {
		return
	}
	pgxPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return
	}
	pool2, err := pgxfence.New(pgxPool, policy)
	if err != nil {
		return
	}
	defer pool2.Close()
}

func ExampleConn() {
	ctx := sqlfence.WithEpoch(context.Background(), 42)
	policy, _ := sqlfence.LoadPolicy("sqlfence.yaml")
	pgxConn, err := pgx.Connect(ctx, "postgres://app@db/app")
	if err != nil {
		return
	}
	conn, err := pgxfence.NewConn(pgxConn, policy)
	if err != nil {
		return
	}
	defer conn.Close(ctx)

	// Named arguments: the rewritten text is what is decided and fenced.
	_, err = conn.Exec(ctx, `UPDATE inventory SET quantity = @q WHERE sku = @sku`, pgx.NamedArgs{"q": 9, "sku": "a"})

	// A transaction: every statement, and every savepoint, fenced with its context's epoch.
	tx, err := conn.Begin(ctx)
	if err != nil {
		return
	}
	defer tx.Rollback(ctx)
	var q int
	err = tx.QueryRow(ctx, `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1 RETURNING quantity`, "a").Scan(&q)
	if errors.Is(err, sqlfence.ErrFenced) {
		return
	}
	_ = tx.Commit(ctx)
}

func ExamplePool_SendBatch() {
	ctx := sqlfence.WithEpoch(context.Background(), 42)
	var pool *pgxfence.Pool // from pgxfence.New

	b := &pgx.Batch{}
	b.Queue(`UPDATE inventory SET quantity = $1 WHERE sku = $2`, 1, "a")
	b.Queue(`UPDATE inventory SET quantity = $1 WHERE sku = $2`, 2, "b")
	br := pool.SendBatch(ctx, b)
	defer br.Close()
	for range b.Len() {
		if _, err := br.Exec(); errors.Is(err, sqlfence.ErrFenced) {
			return // this statement's rows were written by a newer claim
		}
	}
}

func ExamplePool_CopyFrom() {
	ctx := sqlfence.WithEpoch(context.Background(), 42)
	var pool *pgxfence.Pool // from pgxfence.New

	// Every row gets the epoch column (columns must not name it).
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"inventory"}, []string{"sku", "quantity"},
		pgx.CopyFromRows([][]any{{"c", 1}, {"d", 2}}))
	_ = err
}

func Example_sqlc() {
	ctx := sqlfence.WithEpoch(context.Background(), 42)
	var pool *pgxfence.Pool // from pgxfence.New

	// inventorydb is sqlc's output with sql_package: pgx/v5 (examples/sqlcpgx).
	var db DBTX = pool // as inventorydb.New(pool); a *pgxfence.Conn or its pgx.Tx as well
	_ = db
	tx, _ := pool.Begin(ctx)
	db = tx // as inventorydb.New(pool).WithTx(tx)
}
