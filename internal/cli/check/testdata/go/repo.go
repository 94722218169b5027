// Package repo is test input for sqlfence check: SQL in Go source.
package repo

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

const (
	restock   = `UPDATE inventory SET quantity = quantity + $2 WHERE sku = $1`
	wipeTable = "TRUNCATE " + table
	table     = "inventory"
)

type Repo struct {
	db   *sql.DB
	conn *pgx.Conn
}

func (r *Repo) Fine(ctx context.Context, sku string) error {
	_, err := r.db.ExecContext(ctx, restock, sku, 5)
	if err != nil {
		return err
	}
	_, err = r.db.ExecContext(ctx, `SELECT quantity FROM inventory WHERE sku = $1`, sku)
	return err
}

func (r *Repo) Refused(ctx context.Context, sku string) error {
	if _, err := r.db.ExecContext(ctx, wipeTable); err != nil {
		return err
	}
	_, err := r.db.ExecContext(ctx, `
		UPDATE inventory SET quantity = 0, writer_epoch = $2 WHERE sku = $1`, sku, 7)
	if err != nil {
		return err
	}
	rows, err := r.db.QueryContext(ctx, "INSERT INTO inventory VALUES ($1, 0, 0) RETURNING sku", sku)
	if err != nil {
		return err
	}
	rows.Close()
	// pgx's own Exec and Prepare(ctx, name, sql):
	r.conn.Exec(ctx, "DELETE FROM inventory WHERE sku = $1; DELETE FROM inventory WHERE sku = $2", sku, sku)
	r.conn.Prepare(ctx, "inventory_wipe", "TRUNCATE inventory")
	// pgx's CopyFrom, decided as the INSERT it amounts to: the pgx front stamps the
	// epoch on each row, but rows that bring their own are refused.
	_, err = r.conn.CopyFrom(ctx, pgx.Identifier{"inventory"}, []string{"sku"}, pgx.CopyFromRows(nil))
	if err != nil {
		return err
	}
	_, err = r.conn.CopyFrom(ctx, pgx.Identifier{"inventory"}, []string{"sku", "writer_epoch"}, pgx.CopyFromRows(nil))
	return err
}

func (r *Repo) Suppressed(ctx context.Context) error {
	// sqlfence:ignore this maintenance path runs under the guard override, see runbook 12
	_, err := r.db.ExecContext(ctx, "TRUNCATE inventory")
	return err
}

func (r *Repo) NotSQL(q interface{ Query(string) string }) string {
	// A method called Query on something else: the string is not SQL.
	return q.Query("inventory of the warehouse")
}
