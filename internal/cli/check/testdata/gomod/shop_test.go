package shop

import (
	"context"
	"database/sql"
)

// A test's own SQL: checked with --tests only.
func resetForTest(ctx context.Context, db *sql.DB) {
	db.ExecContext(ctx, "TRUNCATE inventory")
}
