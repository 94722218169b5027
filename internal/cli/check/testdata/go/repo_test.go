package repo

import (
	"context"
	"database/sql"
)

// Tests truncate freely; sqlfence check skips _test.go files unless --tests.
func truncateForTest(ctx context.Context, db *sql.DB) {
	db.ExecContext(ctx, "TRUNCATE inventory")
}
