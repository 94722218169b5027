// Package catalogapp is checked with -dsn: its statements are decided with the
// catalog of a database (catalog_test.go's schema) in which inventory is partitioned,
// stock_of only reads and restock_all writes inventory.
package catalogapp

import (
	"context"
	"database/sql"
)

func Maintain(ctx context.Context, db *sql.DB) {
	db.ExecContext(ctx, "TRUNCATE inventory_a")                                // want `SF301: .*inventory_a`
	db.ExecContext(ctx, "UPDATE inventory_a SET quantity = 0 WHERE sku = 'a'") // fenced: a partition of inventory
	db.QueryRowContext(ctx, "SELECT stock_of($1)", "a")                        // its body only reads
	db.ExecContext(ctx, "SELECT restock_all()")                                // want `SF416: `
}
