// One adapter from pgx to QueryFunc, for every reader of the catalog and of a
// server's position: the CLI's, the pgx front's, the connector's probe, the test
// clusters'.

package pgcatalog

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// PgxQueryer is what runs a query on pgx: *pgx.Conn, *pgxpool.Pool, pgx.Tx.
type PgxQueryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// PgxQuery adapts q to QueryFunc: one query, every row's values. opts go before the
// arguments (pgx.QueryExecModeExec, for instance).
func PgxQuery(q PgxQueryer, opts ...any) QueryFunc {
	return func(ctx context.Context, sql string, args ...any) ([][]any, error) {
		if len(opts) > 0 {
			args = append(append([]any(nil), opts...), args...)
		}
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	}
}
