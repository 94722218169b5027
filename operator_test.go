package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// hostileOperators replaces, for any session that puts public before pg_catalog in
// search_path, the comparisons and the aggregate an unqualified fence would use: < and
// <= on bigint that are always true (a stale epoch passes the fence) and a max(bigint)
// that always returns NULL (a fenced write looks as if nothing matched).
const hostileOperators = `
CREATE FUNCTION public.always_true(bigint, bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always_true);
CREATE OPERATOR public.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always_true);
CREATE FUNCTION public.forget(bigint, bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT NULL::bigint';
CREATE AGGREGATE public.max(bigint) (SFUNC = public.forget, STYPE = bigint);
`

// TestFenceIgnoresSessionOperators: what the fence compares does not depend on the
// session. With operators public.< and public.<= that are always true and
// search_path = public, pg_catalog, the text sqlfence sent before it qualified its
// operators lets a stale epoch overwrite a row written at epoch 5; through sqlfence, on
// a connection set up the same way, the stale write changes nothing and is reported
// as fenced, and the early check still sees the newer epoch.
func TestFenceIgnoresSessionOperators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "testdata/sqlfence.yaml")
	if _, err := f.raw.Exec(hostileOperators); err != nil {
		t.Fatal(err)
	}
	const (
		invoices = `SELECT string_agg(id || ':' || total || ':' || writer_epoch, ' ') FROM billing.invoices`
		seeded   = "a:10:5 b:20:5"
	)
	stale := []struct {
		table, stmt, old string // old: the text sqlfence sent with unqualified operators
		args             []any
		state, want      string
	}{
		{"inventory", `UPDATE inventory SET quantity = $2 WHERE sku = $1`,
			`UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch < $3::bigint`,
			[]any{"a", 0}, inventoryState, seeded},
		{"billing.invoices", `UPDATE billing.invoices SET total = $2 WHERE id = $1`, // repeatable: <=
			`UPDATE billing.invoices SET total = $2, writer_epoch = $3::bigint WHERE (id = $1) AND invoices.writer_epoch <= $3::bigint`,
			[]any{1, 0}, invoices, "1:100:5"},
	}

	// The attack works on the unqualified text: sent through plain pgx on a session
	// with public first, the stale epoch 3 overwrites the row (rolled back).
	raw, err := f.raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stale {
		args := append(append([]any{}, s.args...), int64(3))
		if n := execRows(t, raw.ExecContext, s.old, args); n != 0 {
			t.Fatalf("%s: the unqualified fence let epoch 3 over epoch 5 with the default search_path (%d rows)", s.table, n)
		}
	}
	if _, err := raw.ExecContext(ctx, `SET search_path = public, pg_catalog`); err != nil {
		t.Fatal(err)
	}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		args := append(append([]any{}, s.args...), int64(3))
		if n := execRows(t, tx.ExecContext, s.old, args); n != 1 {
			t.Fatalf("%s: the unqualified fence was not fooled by public.< (%d rows): the test proves nothing", s.table, n)
		}
	}
	var forgotten *int64
	if err := tx.QueryRow(`SELECT max(writer_epoch) FROM inventory`).Scan(&forgotten); err != nil || forgotten != nil {
		t.Fatalf("unqualified max(writer_epoch) = %v, %v; want public.max's NULL", forgotten, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `RESET search_path`); err != nil { // before it goes back to the pool
		t.Fatal(err)
	}
	raw.Close()
	if got := f.state(t, inventoryState); got != seeded {
		t.Fatalf("inventory after the rollback: %s", got)
	}

	// Through sqlfence, on one connection with the same search_path, nothing changes.
	conn, err := f.fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET search_path = public, pg_catalog`); err != nil {
		t.Fatal(err)
	}
	var path string
	if err := conn.QueryRowContext(ctx, `SHOW search_path`).Scan(&path); err != nil || path != "public, pg_catalog" {
		t.Fatalf("search_path = %q, %v", path, err)
	}
	epoch3 := sqlfence.WithEpoch(ctx, 3)
	for _, s := range stale {
		_, err := conn.ExecContext(epoch3, s.stmt, s.args...)
		var fe *sqlfence.Error
		if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.StoredEpoch != 5 || !fe.HasStored {
			t.Errorf("%s: stale write under a hostile search_path: err = %v, want ErrFenced with stored epoch 5", s.table, err)
		}
		if got := f.state(t, s.state); got != s.want {
			t.Errorf("%s: %s after the stale write, want %s", s.table, got, s.want)
		}
	}
	err = sqlfence.CheckSuperseded(epoch3, conn, nil, "inventory", "sku = $1", "a")
	var fe *sqlfence.Error
	if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.StoredEpoch != 5 {
		t.Errorf("early check under a hostile search_path: err = %v, want ErrFenced with stored epoch 5", err)
	}
}

func execRows(t *testing.T, exec func(context.Context, string, ...any) (sql.Result, error), query string, args []any) int64 {
	t.Helper()
	res, err := exec(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
