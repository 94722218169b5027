package sqlfencesqlx_test

import (
	"context"
	"log"

	"github.com/jmoiron/sqlx"

	"github.com/sqlfence/sqlfence"
	_ "github.com/sqlfence/sqlfence/contrib/sqlx" // sqlx.BindDriver("sqlfence", sqlx.DOLLAR)
)

// The sqlx snippet of docs/orms-and-queues.md (compiled, not run: it needs a server).
func Example() {
	ctx, epoch := context.Background(), int64(7) // epoch: from the job's claim

	db, err := sqlx.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	type Item struct {
		SKU      string `db:"sku"`
		Quantity int    `db:"quantity"`
	}
	_, err = db.NamedExecContext(sqlfence.WithEpoch(ctx, epoch),
		`UPDATE inventory SET quantity = :quantity WHERE sku = :sku`, Item{SKU: "widget", Quantity: 4})
	if err != nil {
		log.Fatal(err)
	}
}
