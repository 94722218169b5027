// Package admin holds a maintenance job whose refusal is suppressed with a reason.
package admin

import (
	"context"
	"database/sql"
)

// Wipe runs under the guard's operator override.
func Wipe(ctx context.Context, db *sql.DB) error {
	//sqlfence:ignore SF301 demo reset, run by an operator under the guard override
	_, err := db.ExecContext(ctx, "TRUNCATE inventory")
	return err
}

func Note(ctx context.Context, db *sql.DB) error {
	_, é := db.ExecContext(ctx, "DELETE FROM inventory WHERE sku = $1; SELECT 1", "x")
	return é
}
