package sqlfencebun_test

import (
	"context"
	"database/sql"
	"errors"
	"log"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/sqlfence/sqlfence"
)

// The bun snippet of docs/orms-and-queues.md (compiled, not run: it needs a server).
func Example() {
	ctx, epoch := context.Background(), int64(7) // epoch: from the job's claim

	sqldb, err := sql.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	db := bun.NewDB(sqldb, pgdialect.New())

	// type Item struct {
	// 	bun.BaseModel `bun:"table:inventory"`
	// 	SKU         string `bun:"sku,pk"`
	// 	Quantity    int    `bun:"quantity,notnull"`
	// 	WriterEpoch int64  `bun:"writer_epoch,scanonly"` // read back, never written: sqlfence writes it
	// }
	item := Item{SKU: "widget", Quantity: 4}
	_, err = db.NewUpdate().Model(&item).WherePK().Returning("*").Exec(sqlfence.WithEpoch(ctx, epoch))
	switch {
	case errors.Is(err, sqlfence.ErrFenced): // superseded: stop the handler, do not retry
	case err != nil:
		log.Fatal(err)
	default:
		log.Println("written at epoch", item.WriterEpoch)
	}
}
