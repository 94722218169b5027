// Handlers on pgx, its pool, and sqlfence's pgx front.
package app

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlfence/sqlfence/pgxfence"
)

type Worker struct {
	conn  *pgx.Conn
	pool  *pgxpool.Pool
	fence *pgxfence.Conn
}

func (w *Worker) Ship(ctx context.Context, sku string) error {
	_, err := w.conn.Exec(ctx, "UPDATE inventory SET quantity = 0 WHERE sku = $1", sku)
	return err
}

func (w *Worker) Batch(ctx context.Context) error {
	b := &pgx.Batch{}
	b.Queue("UPDATE inventory SET note = $1 WHERE sku = $2", "ok", "a")
	b.Queue("SELECT 1; DELETE FROM inventory") // want `SF306: .*2 statements writes a protected table`
	return w.conn.SendBatch(ctx, b).Close()
}

func (w *Worker) Import(ctx context.Context, rows [][]any) error {
	// The pgx front stamps the epoch on every row it copies into a protected table.
	_, err := w.conn.CopyFrom(ctx, pgx.Identifier{"inventory"}, []string{"sku", "quantity"}, pgx.CopyFromRows(rows))
	if err != nil {
		return err
	}
	// Rows that bring their own epoch are refused, as the INSERT would be.
	_, err = w.fence.CopyFrom(ctx, pgx.Identifier{"inventory"}, []string{"sku", "writer_epoch"}, pgx.CopyFromRows(rows)) // want `SF\d+: sqlfence would refuse the SQL of this .*CopyFrom call: table inventory: .*writer_epoch`
	if err != nil {
		return err
	}
	cols := []string{"sku"}
	cols = append(cols, "quantity")
	_, err = w.pool.CopyFrom(ctx, pgx.Identifier{"inventory"}, cols, pgx.CopyFromRows(rows)) // want `SF805: this .*CopyFrom call writes protected table inventory with SQL built at run time`
	if err != nil {
		return err
	}
	_, err = w.pool.CopyFrom(ctx, pgx.Identifier{"public", "staging"}, []string{"sku"}, pgx.CopyFromRows(rows))
	return err
}

func (w *Worker) Settle(ctx context.Context) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "DELETE FROM billing.invoices WHERE id = $1", 7); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$`); err != nil { // want `SF416: .*DO block writes the protected table`
		return err
	}
	return tx.Commit(ctx)
}

func (w *Worker) Archive(ctx context.Context) error {
	_, err := w.fence.Exec(ctx, "TRUNCATE reports") // want `SF301: .*pgxfence.Conn.Exec call: table reports`
	if err != nil {
		return err
	}
	row := w.pool.QueryRow(ctx, "SELECT max(id) FROM reports")
	var id int
	return row.Scan(&id)
}
