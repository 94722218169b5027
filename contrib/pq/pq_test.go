// Tests of sqlfence over lib/pq: sqlfence.NewConnector wraps pq's connector. No code
// of its own is needed; the lib/pq snippet of docs/orms-and-queues.md is compiled by Example.
package sqlfencepq_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/lib/pq"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	schema = `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 5)`
	state = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`
)

func TestLibPQ(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t) // a URL with ?sslmode=disable
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(schema); err != nil {
		t.Fatal(err)
	}
	policy, err := sqlfence.ParsePolicy([]byte("version: 1\ncatalog_refresh: 1h\nmode: strict\ntables: [inventory]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	// pq sends DSN parameters it does not know as startup parameters: the guard's
	// setting and standard_conforming_strings ride in the startup message.
	connector, err := pq.NewConnector(dsn + "&sqlfence.fenced=on&standard_conforming_strings=on")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(connector, policy))
	defer db.Close()

	var fenced string
	if err := db.QueryRow(`SELECT pg_catalog.current_setting('sqlfence.fenced')`).Scan(&fenced); err != nil || fenced != "on" {
		t.Fatalf("sqlfence.fenced = %q (%v), want on", fenced, err)
	}
	table := func() string {
		var s string
		if err := raw.QueryRow(state).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	at := func(e int64) context.Context { return sqlfence.WithEpoch(ctx, e) }
	const ship = `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`

	if _, err := db.ExecContext(at(3), ship, "a", 1); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale: err = %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(ctx, ship, "a", 1); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
	}
	if got := table(); got != "a:10:5 b:20:5" {
		t.Fatalf("after stale and unfenced writes: %q", got)
	}
	if _, err := db.ExecContext(at(7), ship, "a", 1); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	if _, err := db.ExecContext(at(7), ship, "a", 1); !errors.Is(err, sqlfence.ErrAlreadyWritten) {
		t.Fatalf("fresh again, strict: err = %v, want ErrAlreadyWritten", err)
	}

	// RETURNING through Query: the fence comes from rows.Err().
	rows, err := db.QueryContext(at(6), ship+` RETURNING quantity`, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale RETURNING: rows.Err() = %v, want ErrFenced", err)
	}
	rows.Close()

	// A prepared statement binds the epoch of the context it runs with.
	st, err := db.PrepareContext(ctx, `INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(at(8), "b", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(at(4), "b", 3); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale upsert: err = %v, want ErrFenced", err)
	}
	if got := table(); got != "a:9:7 b:2:8" {
		t.Fatalf("table %q, want a:9:7 b:2:8", got)
	}
}
