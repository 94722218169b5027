// Handlers on GORM, bun and sqlx, which number ? placeholders themselves (sqlx after
// Rebind).
package app

import (
	"context"

	"github.com/jmoiron/sqlx"
	"github.com/uptrace/bun"
	"gorm.io/gorm"
)

type Repo struct {
	gdb *gorm.DB
	bdb *bun.DB
	xdb *sqlx.DB
}

type Item struct {
	SKU      string
	Quantity int
}

func (r *Repo) GormAdjust(sku string, n int) error {
	return r.gdb.Exec("UPDATE inventory SET quantity = quantity + ? WHERE sku = ?", n, sku).Error
}

func (r *Repo) GormReset() error {
	return r.gdb.Exec("UPDATE inventory SET writer_epoch = ?", 0).Error // want `SF303: sqlfence would refuse the SQL of this gorm.DB.Exec call`
}

func (r *Repo) GormItems() ([]Item, error) {
	var items []Item
	err := r.gdb.Raw("SELECT sku, quantity FROM inventory WHERE quantity > ?", 0).Scan(&items).Error
	return items, err
}

func (r *Repo) BunPurge(ctx context.Context) error {
	var n int
	if err := r.bdb.NewRaw("SELECT count(*) FROM reports WHERE id > ?", 0).Scan(ctx, &n); err != nil {
		return err
	}
	_, err := r.bdb.ExecContext(ctx, "COPY reports FROM '/tmp/reports.csv'") // want `SF302|SF407`
	return err
}

func (r *Repo) BunTouch() error {
	_, err := r.bdb.Exec("INSERT INTO reports VALUES (?, ?)", 1, "x") // want `SF304: .*bun.DB.Exec call`
	return err
}

// bun's ?0 is argument 0; ?TableName and other named placeholders are filled in
// by bun, with text only the program knows.
func (r *Repo) BunPlaceholders(ctx context.Context, ids []int64) error {
	if err := r.bdb.NewRaw("UPDATE reports SET body = ?0 WHERE id = ?1", "x", 1).Scan(ctx); err != nil {
		return err
	}
	if err := r.bdb.NewRaw("DELETE FROM ?TableName WHERE id = ?0", 1).Scan(ctx); err != nil {
		return err
	}
	if err := r.bdb.NewRaw("UPDATE reports SET body = ?0, fence_epoch = ?1 WHERE id = ?2", "x", 0, 1).Scan(ctx); err != nil { // want `SF303: .*fence_epoch`
		return err
	}
	return r.bdb.NewRaw("UPDATE reports SET body = ? WHERE id IN (?ids)", "x").Scan(ctx) // want `SF805: .*bun.DB.NewRaw call writes protected table reports`
}

func (r *Repo) SqlxGet(ctx context.Context, sku string) (Item, error) {
	var it Item
	err := r.xdb.GetContext(ctx, &it, r.xdb.Rebind("SELECT sku, quantity FROM inventory WHERE sku = ?"), sku)
	return it, err
}

func (r *Repo) SqlxWrongBind(sku string) error {
	var it Item
	return r.xdb.Get(&it, "SELECT sku FROM inventory WHERE sku = ?", sku) // want `SF321: .*sqlx.DB.Get call`
}

func (r *Repo) SqlxMigrate() {
	r.xdb.MustExec("ALTER TABLE inventory DROP COLUMN writer_epoch") // want `SF401: .*sqlx.DB.MustExec call`
}

func (r *Repo) SqlxPlain(sku string) error {
	_, err := r.xdb.Exec("DELETE FROM inventory WHERE sku = $1", sku)
	if err != nil {
		return err
	}
	var items []Item
	return sqlx.Select(r.xdb, &items, "TRUNCATE inventory") // want `SF301: .*sqlx.Select call`
}
