// Suppressions.
package app

import (
	"context"
	"database/sql"
)

func Maintenance(ctx context.Context, db *sql.DB) {
	//sqlfence:ignore SF301 demo data reset, run only against the staging database under the guard override
	db.ExecContext(ctx, "TRUNCATE inventory")

	db.ExecContext(ctx, "TRUNCATE reports") // sqlfence:ignore nightly rollup, run with the guard override

	/* sqlfence:ignore */                   // want `SF803: sqlfence:ignore needs a reason`
	db.ExecContext(ctx, "TRUNCATE reports") // want `SF301`

	//sqlfence:ignore SF303 wrong code: the TRUNCATE below is still reported // want `SF804: sqlfence:ignore suppresses nothing.*limited to SF303`
	db.ExecContext(ctx, "TRUNCATE reports") // want `SF301`

	//sqlfence:ignore SF301 nothing below is refused // want `SF804`
	db.ExecContext(ctx, "SELECT 1")
}
