// Package catalog holds statements only the database's catalog decides: with --dsn
// the partition's TRUNCATE is refused and the reading function passes; from the text
// alone inventory_a is not protected and stock_of is a function sqlfence cannot see
// into.
package catalog

import (
	"context"
	"database/sql"
)

func Maintain(ctx context.Context, db *sql.DB) {
	db.ExecContext(ctx, "TRUNCATE inventory_a")
	db.QueryRowContext(ctx, "SELECT stock_of($1)", "a")
}
