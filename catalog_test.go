package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// TestResolveCatalog: with resolve: catalog, writes through a partition, an
// inheritance child or an updatable view of a protected table are fenced as writes to
// the table itself, and a view that cannot carry the fence is refused.
func TestResolveCatalog(t *testing.T) {
	t.Parallel()
	dsn, _ := newRawDB(t, `
		CREATE TABLE events (id int, at date NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (at);
		CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
		CREATE TABLE inventory (sku text PRIMARY KEY, quantity int, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE inventory_archive () INHERITS (inventory);
		CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
		CREATE VIEW stock_plain AS SELECT sku, quantity FROM inventory;
		INSERT INTO events_2026 VALUES (1, '2026-05-01', 5);
		INSERT INTO inventory VALUES ('a', 1, 5);`)
	policy := writePolicy(t, "version: 1\ncatalog_refresh: 1h\nresolve: catalog\ntables:\n  - name: events\n  - name: inventory\n")
	db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", policy))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	for _, stmt := range []string{
		`UPDATE events_2026 SET id = 2 WHERE id = 1`,
		`DELETE FROM inventory_archive`,
		`UPDATE stock SET quantity = 0 WHERE sku = 'a'`,
	} {
		if _, err := db.ExecContext(context.Background(), stmt); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Errorf("%s without an epoch: err = %v, want ErrUnfenced", stmt, err)
		}
		if _, err := db.ExecContext(sqlfence.WithEpoch(context.Background(), 3), stmt); !errors.Is(err, sqlfence.ErrFenced) && !strings.HasPrefix(stmt, "DELETE") {
			t.Errorf("%s with a stale epoch: err = %v, want ErrFenced", stmt, err)
		}
	}
	_, err = db.ExecContext(sqlfence.WithEpoch(context.Background(), 7), `UPDATE stock_plain SET quantity = 0`)
	if !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), "stock_plain") {
		t.Fatalf("view without the epoch column: err = %v, want ErrRefused naming it", err)
	}
}

// TestResolveCatalogColumnChecks: an epoch column the fence cannot work with stops
// the connection with an error that says how to fix the table.
func TestResolveCatalogColumnChecks(t *testing.T) {
	t.Parallel()
	dsn, _ := newRawDB(t, `
		CREATE TABLE nullable (id int, writer_epoch bigint);
		CREATE TABLE narrow (id int, writer_epoch int NOT NULL DEFAULT 0);
		CREATE TABLE missing (id int);`)
	for table, want := range map[string]string{
		"nullable": "fences every write to its row forever",
		"narrow":   "must be bigint",
		"missing":  "ADD COLUMN writer_epoch bigint NOT NULL DEFAULT 0",
		"absent":   "does not exist",
	} {
		policy := writePolicy(t, "version: 1\ncatalog_refresh: 1h\nresolve: catalog\ntables:\n  - name: "+table+"\n")
		db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", policy))
		if err != nil {
			t.Fatal(err)
		}
		err = db.Ping()
		db.Close()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", table, err, want)
		}
	}
}

func writePolicy(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
