// Helpers that build SQL: what the analyzer can still decide, and what it cannot.
package app

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

const stockTable = "inventory"

const setQuantity = "UPDATE " + stockTable + " SET quantity = $1"

// byKey adds the key condition every statement of this file uses.
func byKey(stmt string) string { return stmt + " WHERE sku = $2" }

func overwriteEpoch(table string) string {
	return fmt.Sprintf("UPDATE %s SET writer_epoch = %d", table, 0)
}

func Build(ctx context.Context, db *sql.DB, id int, col string, skus []string) error {
	// A constant concatenation, through a helper: fenced.
	if _, err := db.ExecContext(ctx, byKey(setQuantity), 1, "a"); err != nil {
		return err
	}
	// A helper given a constant: the epoch column assigned.
	if _, err := db.ExecContext(ctx, overwriteEpoch(stockTable)); err != nil { // want `SF303: .*inventory`
		return err
	}
	// fmt.Sprintf of an integer: the shape is the same for every id.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE id = %d", "reports", id)); err != nil {
		return err
	}
	q := fmt.Sprintf("TRUNCATE %s", "billing.invoices")
	if _, err := db.ExecContext(ctx, q); err != nil { // want `SF301: .*billing.invoices`
		return err
	}
	// A column name chosen at run time: nothing can tell what it writes.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE inventory SET %s = $1 WHERE sku = $2", col), 1, "a"); err != nil { // want `SF805: this sql.DB.ExecContext call writes protected table inventory with SQL built at run time`
		return err
	}
	in := "DELETE FROM billing.invoices WHERE id IN (" + strings.Join(skus, ",") + ")"
	if _, err := db.ExecContext(ctx, in); err != nil { // want `SF805: .*billing.invoices`
		return err
	}
	// Built at run time, but only a read of the protected table, or a write of
	// another one, or of a table only the program knows.
	if _, err := db.ExecContext(ctx, "INSERT INTO audit (sku) SELECT sku FROM inventory WHERE "+col+" = $1", 1); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM "+col+" WHERE sku = $1", 1); err != nil {
		return err
	}
	_, err := db.QueryContext(ctx, "SELECT * FROM inventory WHERE "+col+" = $1 FOR UPDATE", 1)
	return err
}

// Restrict builds its statement in steps.
func Restrict(ctx context.Context, db *sql.DB, sku string) error {
	q := "UPDATE inventory SET quantity = 0"
	if sku != "" {
		q += " WHERE sku = $1"
	}
	_, err := db.ExecContext(ctx, q, sku) // want `SF805: .*inventory`
	return err
}

func first[T any](query string, _ T) string { return query }

func Generic(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, first("TRUNCATE inventory", 1)) // want `SF301`
	return err
}

// Exec runs whatever it is given: the analyzer judges the callers' constants, not this.
func Exec(ctx context.Context, db *sql.DB, query string) error {
	_, err := db.ExecContext(ctx, query)
	return err
}

// Store wraps a pool, with pgx's method shapes: calls of it are judged where the
// constant is, and inside it the text is its caller's.
type Store struct{ w *Worker }

func (s *Store) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := s.w.pool.Exec(ctx, sql, args...)
	return err
}

// Search has the shape too, but its text is no SQL: text that does not parse is left
// alone.
type Search struct{}

func (Search) Query(ctx context.Context, q string, args ...any) ([]string, error) { return nil, nil }

func Wrapped(ctx context.Context, s *Store, search Search) error {
	if _, err := search.Query(ctx, "name:widget AND color:red"); err != nil {
		return err
	}
	return s.Exec(ctx, "TRUNCATE inventory") // want `SF301: .*app.Store.Exec call`
}

// Migrate runs the schema's migrations on a handle of pgx's own driver: the sqlfence
// driver never sees them, so nothing is reported, however they are built.
func Migrate(ctx context.Context, dsn string, files []string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, f := range files {
		if _, err := db.ExecContext(ctx, "UPDATE inventory SET "+f); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, "TRUNCATE inventory")
	return err
}

// MigrateFenced does the same on a sqlfence handle, where it is reported.
func MigrateFenced(ctx context.Context, dsn string, files []string) error {
	db, err := sql.Open("sqlfence", dsn)
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := db.ExecContext(ctx, "UPDATE inventory SET "+f); err != nil { // want `SF805: .*inventory`
			return err
		}
	}
	return nil
}

// Unknown writes on a *sql.DB whose driver is not known here: reported.
func Unknown(ctx context.Context, open func() (*sql.DB, error), col string) error {
	db, err := open()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "UPDATE inventory SET "+col+" = 1") // want `SF805: .*inventory`
	return err
}
