package pgxfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
)

// shapes are the write shapes of the database/sql front's TestShapes, judged on the
// data the same way: a stale epoch (3, below the stored 5) changes no existing row,
// a fresh one (7) lands stamped 7, no epoch sends nothing.
var shapes = []struct {
	name       string
	stmt       string
	args       []any
	query      bool // through Query (RETURNING, EXPLAIN)
	state      string
	stale      string
	staleErr   error
	fresh      string
	freshCount int64 // rows affected by the fresh run through Exec, -1 to skip
}{
	{name: "update", stmt: `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, args: []any{"a", 1},
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:9:7 b:20:5", freshCount: 1},
	{name: "update from returning", query: true,
		stmt:  `UPDATE inventory i SET quantity = s.q FROM staging s WHERE i.sku = s.sku RETURNING i.sku`,
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:1:7 b:0:7", freshCount: -1},
	{name: "update without where", stmt: `UPDATE inventory SET quantity = 0`,
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:0:7 b:0:7", freshCount: 2},
	{name: "delete", stmt: `DELETE FROM inventory WHERE sku = $1`, args: []any{"a"},
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "b:20:5", freshCount: 1},
	{name: "delete using returning", query: true,
		stmt:  `DELETE FROM inventory AS i USING staging s WHERE i.sku = s.sku AND s.gone RETURNING i.sku`,
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:10:5", freshCount: -1},
	{name: "insert values", stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4)`, args: []any{"c", 1, "d", 2},
		stale: "a:10:5 b:20:5 c:1:3 d:2:3", fresh: "a:10:5 b:20:5 c:1:7 d:2:7", freshCount: 2},
	{name: "insert select", stmt: `INSERT INTO inventory (sku, quantity) SELECT sku || 'x', q FROM staging WHERE NOT gone`,
		stale: "a:10:5 ax:1:3 b:20:5 cx:3:3", fresh: "a:10:5 ax:1:7 b:20:5 cx:3:7", freshCount: 2},
	{name: "upsert do update", stmt: `INSERT INTO inventory AS i (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = i.quantity + excluded.quantity`, args: []any{"a", 5},
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:15:7 b:20:5", freshCount: 1},
	{name: "upsert returning", query: true, stmt: `INSERT INTO inventory AS i (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity RETURNING quantity`, args: []any{"a", 50},
		stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:50:7 b:20:5", freshCount: -1},
	{name: "upsert do nothing", stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT DO NOTHING`, args: []any{"a", 5},
		stale: "a:10:5 b:20:5", fresh: "a:10:5 b:20:5", freshCount: 0},
	{name: "merge", stmt: `MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
		WHEN MATCHED AND s.gone THEN DELETE
		WHEN MATCHED THEN UPDATE SET quantity = s.q
		WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)`,
		stale: "a:10:5 b:20:5 c:3:3", fresh: "a:1:7 c:3:7", freshCount: 3},
	{name: "data-modifying cte", stmt: `WITH moved AS (UPDATE inventory SET quantity = 0 WHERE sku = $1 RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved`, args: []any{"a"},
		state: `SELECT (` + inventoryState + `) || ' audit:' || coalesce((SELECT string_agg(sku, ',') FROM audit), '')`,
		stale: "a:10:5 b:20:5 audit:", fresh: "a:0:7 b:20:5 audit:a", freshCount: 1},
	{name: "explain analyze", query: true, stmt: `EXPLAIN ANALYZE UPDATE inventory SET quantity = 1 WHERE sku = $1`, args: []any{"a"},
		stale: "a:10:5 b:20:5", fresh: "a:1:7 b:20:5", freshCount: -1},
	{name: "schema-qualified repeatable", stmt: `UPDATE billing.invoices SET total = $1 WHERE id = $2`, args: []any{200, 1},
		state: `SELECT string_agg(id || ':' || total || ':' || writer_epoch, ' ') FROM billing.invoices`,
		stale: "1:100:5", staleErr: sqlfence.ErrFenced, fresh: "1:200:7", freshCount: 1},
}

// run sends stmt through d (Exec, or Query read to its end) and returns the rows
// affected (Exec) and the error.
func run(ctx context.Context, d DBTX, query bool, stmt string, args ...any) (int64, error) {
	if !query {
		tag, err := d.Exec(ctx, stmt, args...)
		return tag.RowsAffected(), err
	}
	rows, err := d.Query(ctx, stmt, args...)
	if err != nil {
		return -1, err
	}
	for rows.Next() {
	}
	rows.Close()
	return -1, rows.Err()
}

// TestShapes runs every shape through Pool, Conn, a pool's transaction and a
// savepoint, on Exec and Query, with a stale, a fresh and no epoch.
func TestShapes(t *testing.T) {
	p := policy(t, "")
	for _, c := range shapes {
		for _, fr := range fronts {
			t.Run(c.name+"/"+fr.name, func(t *testing.T) {
				t.Parallel()
				state := c.state
				if state == "" {
					state = inventoryState
				}
				for _, epoch := range []int64{3, 7, 0} {
					f := newFixture(t)
					ctx := context.Background()
					if epoch != 0 {
						ctx = sqlfence.WithEpoch(ctx, epoch)
					}
					ctx = timeout(t, ctx)
					before := f.state(t, state)
					d, end := fr.open(t, f, p, pgx.QueryExecModeCacheStatement)
					n, err := run(ctx, d, c.query, c.stmt, c.args...)
					if cerr := end(); err == nil {
						err = cerr
					}
					got := f.state(t, state)
					switch epoch {
					case 3:
						if c.staleErr == nil && err != nil || c.staleErr != nil && !errors.Is(err, c.staleErr) {
							t.Errorf("stale: err = %v, want %v", err, c.staleErr)
						}
						var fe *sqlfence.Error
						if errors.As(err, &fe) && fe.HasStored && (fe.StoredEpoch != 5 || fe.Epoch != 3) {
							t.Errorf("stale: epochs own %d stored %d, want 3 and 5", fe.Epoch, fe.StoredEpoch)
						}
						if got != c.stale {
							t.Errorf("stale: state %q, want %q", got, c.stale)
						}
					case 7:
						if err != nil {
							t.Errorf("fresh: %v", err)
						}
						if got != c.fresh {
							t.Errorf("fresh: state %q, want %q", got, c.fresh)
						}
						if !c.query && c.freshCount >= 0 && n != c.freshCount {
							t.Errorf("fresh: %d rows, want %d", n, c.freshCount)
						}
					default:
						if !errors.Is(err, sqlfence.ErrUnfenced) {
							t.Errorf("no epoch: err = %v, want ErrUnfenced", err)
						}
						if got != before {
							t.Errorf("no epoch: state %q, want %q", got, before)
						}
					}
				}
			})
		}
	}
}
