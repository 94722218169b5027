// Package shop is the example for sqlfence-vet of docs/analyzer.md.
package shop

import (
	"context"
	"database/sql"
	"fmt"
)

const restock = `UPDATE inventory SET quantity = quantity + $1 WHERE sku = $2`

func Restock(ctx context.Context, db *sql.DB, sku string, n int) error {
	_, err := db.ExecContext(ctx, restock, n, sku) // fenced by the driver
	return err
}

func Reset(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, "TRUNCATE inventory")
	return err
}

func SetColumn(ctx context.Context, db *sql.DB, column string, v int) error {
	_, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE inventory SET %s = $1", column), v)
	return err
}
