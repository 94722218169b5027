package sqlfencegorm_test

import (
	"context"
	"database/sql"
	"errors"
	"log"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/sqlfence/sqlfence"
	sqlfencegorm "github.com/sqlfence/sqlfence/contrib/gorm"
)

// The GORM snippet of docs/orms-and-queues.md (compiled, not run: it needs a server).
func Example() {
	ctx, epoch := context.Background(), int64(7) // epoch: from the job's claim

	policy, err := sqlfence.LoadPolicy("sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := sql.Open("sqlfence", "postgres://app@db/app?sqlfence_policy=sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Use(sqlfencegorm.New(policy)); err != nil { // the same policy the driver fences with
		log.Fatal(err)
	}

	// Item has a WriterEpoch int64 `gorm:"not null;default:0"` field for the epoch column.
	item := Item{SKU: "widget", Quantity: 5}
	err = db.WithContext(sqlfence.WithEpoch(ctx, epoch)).Save(&item).Error
	switch {
	case errors.Is(err, sqlfence.ErrFenced): // superseded: stop the handler, do not retry
	case err != nil:
		log.Fatal(err)
	default:
		log.Println("written at epoch", item.WriterEpoch) // the plugin set it to epoch
	}
}
