// Handlers on sqlx's named queries: sqlx rewrites :name into $1, $2, … (and :: into
// :) before the driver sees the text, so that is the text judged.
package app

import (
	"context"

	"github.com/jmoiron/sqlx"
)

type restock struct {
	SKU string `db:"sku"`
	Qty int    `db:"qty"`
}

func NamedRestock(db *sqlx.DB, r restock) error {
	_, err := db.NamedExec("UPDATE inventory SET quantity = quantity + :qty WHERE sku = :sku", r)
	return err
}

func NamedStamp(db *sqlx.DB, r restock) error {
	_, err := db.NamedExec("UPDATE inventory SET writer_epoch = :qty WHERE sku = :sku", r) // want `SF303: .*sqlx.DB.NamedExec call`
	return err
}

func NamedReset(ctx context.Context, db *sqlx.DB) error {
	_, err := db.NamedExecContext(ctx, "TRUNCATE inventory", map[string]any{}) // want `SF301: .*sqlx.DB.NamedExecContext call`
	return err
}

// sqlx's escape: :::: is a cast (::), and :: alone becomes one colon, which the
// server cannot parse (SF320): sqlx sends quantity:text.
func NamedCasts(db *sqlx.DB) {
	db.NamedQuery("SELECT quantity::::text FROM inventory WHERE quantity > :min ::::int", map[string]any{"min": 1})
	db.NamedQuery("SELECT quantity::text FROM inventory WHERE sku = :sku", map[string]any{"sku": "a"}) // want `SF320: .*sqlx.DB.NamedQuery call`
	// :min::int is an error of sqlx's (a colon inside a name): it sends nothing.
	db.NamedExec("TRUNCATE inventory WHERE :min::int", map[string]any{"min": 1})
}

// A name inside a string literal is a parameter too: sqlx does not read SQL.
func NamedInLiteral(db *sqlx.DB) {
	db.NamedExec("UPDATE reports SET body = 'at :noon' WHERE id = :id", map[string]any{"noon": "12", "id": 1})
}

// sqlx.Named gives ? placeholders: with Rebind they become $n; without it the driver
// receives ?.
func NamedThenRebind(db *sqlx.DB, id int) error {
	q, args, err := sqlx.Named("DELETE FROM reports WHERE id = :id", map[string]any{"id": id})
	if err != nil {
		return err
	}
	if _, err := db.Exec(db.Rebind(q), args...); err != nil {
		return err
	}
	_, err = db.Exec(q, args...) // want `SF321: .*sql.DB.Exec call`
	return err
}

func BindNamedOnHandle(db *sqlx.DB) error {
	q, args, err := db.BindNamed("UPDATE reports SET fence_epoch = :e WHERE id = :id", map[string]any{})
	if err != nil {
		return err
	}
	_, err = db.Exec(q, args...) // want `SF303: .*fence_epoch`
	return err
}

func BindNamedDollar(db *sqlx.DB) error {
	q, args, _ := sqlx.BindNamed(sqlx.DOLLAR, "INSERT INTO reports VALUES (:id, :body)", map[string]any{})
	_, err := db.Exec(q, args...) // want `SF304: .*sql.DB.Exec call`
	return err
}

// sqlx.In repeats ? for a slice's elements: the same statement to the engine.
func InThenRebind(db *sqlx.DB, skus []string) error {
	q, args, err := sqlx.In("DELETE FROM inventory WHERE sku IN (?)", skus)
	if err != nil {
		return err
	}
	if _, err := db.Exec(db.Rebind(q), args...); err != nil {
		return err
	}
	q2, args2, _ := sqlx.In("UPDATE inventory SET writer_epoch = 0 WHERE sku IN (?)", skus)
	_, err = db.Exec(db.Rebind(q2), args2...) // want `SF303: .*writer_epoch`
	return err
}

func NamedFuncs(ctx context.Context, db *sqlx.DB, tx *sqlx.Tx, conn *sqlx.Conn, column string) {
	sqlx.NamedExec(db, "TRUNCATE billing.invoices", nil) // want `SF301: .*sqlx.NamedExec call`
	sqlx.NamedQueryContext(ctx, db, "SELECT sku FROM inventory WHERE sku = :sku", nil)
	db.PrepareNamed("COPY inventory FROM STDIN") // want `SF302: .*sqlx.DB.PrepareNamed call`
	db.PrepareNamedContext(ctx, "DELETE FROM inventory WHERE sku = :sku")
	tx.NamedExec("UPDATE inventory SET "+column+" = :v", nil)                          // want `SF805: .*sqlx.Tx.NamedExec call writes protected table inventory`
	conn.NamedExecContext(ctx, "UPDATE jobs SET status = :status WHERE id = :id", nil) // want `SF601: .*sqlx.Conn.NamedExecContext call`
}
