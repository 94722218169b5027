// Handlers on database/sql: the inventory service's HTTP endpoints.
package app

import (
	"context"
	"database/sql"
	"net/http"
)

type Server struct {
	db *sql.DB
}

// Reserve is fenced by the driver: an ordinary protected write.
func (s *Server) Reserve(ctx context.Context, sku string, n int) error {
	_, err := s.db.ExecContext(ctx, `UPDATE inventory SET quantity = quantity - $1 WHERE sku = $2`, n, sku)
	return err
}

// ResetAll is the maintenance endpoint nobody tests.
func (s *Server) ResetAll(w http.ResponseWriter, r *http.Request) {
	if _, err := s.db.ExecContext(r.Context(), "TRUNCATE inventory"); err != nil { // want `SF301: sqlfence would refuse the SQL of this sql.DB.ExecContext call: table inventory: TRUNCATE cannot be fenced`
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *Server) Restock(ctx context.Context, tx *sql.Tx, sku string) error {
	_, err := tx.ExecContext(ctx, "UPDATE inventory SET quantity = 100, writer_epoch = 0 WHERE sku = $1", sku) // want `SF303: .*assigns the epoch column writer_epoch itself`
	return err
}

func (s *Server) Seed(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "INSERT INTO inventory VALUES ('seed', 1)") // want `SF304: .*without a column list`
	return err
}

// MySQL habits: PostgreSQL reads ? as an operator.
func (s *Server) Count(sku string) (n int, err error) {
	err = s.db.QueryRow("SELECT count(*) FROM inventory WHERE sku = ?", sku).Scan(&n) // want `SF321: .*\? placeholders`
	return n, err
}

func (s *Server) PrepareCancel(ctx context.Context) (*sql.Stmt, error) {
	return s.db.PrepareContext(ctx, "DELETE FROM billing.invoices WHERE CURRENT OF invoice_cursor") // want `SF305: .*CURRENT OF`
}

// Reads and unprotected writes are nobody's business.
func (s *Server) List(ctx context.Context) (*sql.Rows, error) {
	if _, err := s.db.Exec("INSERT INTO audit (sku) VALUES ($1)", "list"); err != nil {
		return nil, err
	}
	return s.db.QueryContext(ctx, "SELECT sku, quantity FROM inventory ORDER BY sku")
}

// Recalculate calls a function the policy lists as writing protected tables.
func (s *Server) Recalculate(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, "SELECT billing.recalc($1)", id) // want `SF410: .*billing.recalc`
	return err
}

// ClaimByHand writes the claim table's epoch outside the claim helpers.
func (s *Server) ClaimByHand(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, "UPDATE jobs SET lease_epoch = lease_epoch + 1, status = 'running' WHERE id = $1", id) // want `SF601: .*claim table's "?status"? or "?lease_epoch"? column`
	return err
}
