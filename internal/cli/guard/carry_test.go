package guard

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// carrySchema writes protected rows from inside the database on a statement's
// behalf: an audit trigger on the unprotected orders that updates inventory (strict),
// a trigger that inserts into it, keys that cascade, set null and set default into
// protected children, a function that writes one. Every protected row is at epoch 5.
const carrySchema = `
CREATE TABLE orders (id int PRIMARY KEY, sku text NOT NULL, n int NOT NULL);
CREATE FUNCTION take_stock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE inventory SET quantity = quantity - NEW.n WHERE sku = NEW.sku; RETURN NEW; END $$;
CREATE TRIGGER orders_stock AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION take_stock();
CREATE TABLE returns (id int PRIMARY KEY, sku text NOT NULL);
CREATE FUNCTION restock_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO inventory (sku, quantity) VALUES (NEW.sku, 1); RETURN NEW; END $$;
CREATE TRIGGER returns_restock AFTER INSERT ON returns FOR EACH ROW EXECUTE FUNCTION restock_new();
CREATE TABLE shelf (id int PRIMARY KEY);
INSERT INTO shelf VALUES (1), (2), (3), (0);
CREATE TABLE stock (id int PRIMARY KEY, shelf int DEFAULT 0 REFERENCES shelf ON DELETE CASCADE ON UPDATE SET DEFAULT,
	spare int REFERENCES shelf ON DELETE SET NULL, writer_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO stock VALUES (1, 1, 2, 5), (2, 2, 3, 5);
CREATE FUNCTION sell(s text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN UPDATE inventory SET quantity = quantity - 1 WHERE sku = s; RETURN 1; END $$;
`

const carryPolicy = `version: 1
tables:
  - name: inventory
  - name: billing.invoices
    mode: repeatable
  - name: stock
    mode: repeatable
`

func carryFixture(t *testing.T) (db *sql.DB, dsn string, exec func(string) string) {
	t.Helper()
	dsn, _, raw := guardFixture(t)
	if _, err := raw.Exec(t.Context(), carrySchema); err != nil {
		t.Fatal(err)
	}
	policy := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", carryPolicy)
	out, errOut, code := cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	state := func(q string) string {
		var s string
		if err := raw.QueryRow(t.Context(), q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	return db, dsn, state
}

// TestGuardCarriesEpoch: with the guard installed and resolve: catalog, a statement
// whose trigger, foreign-key action or called function writes a protected table is
// sent with its epoch: a fresh epoch writes and stamps those rows, a stale one fails
// the whole statement as fenced (nothing written), no epoch is refused before
// anything is sent. Judged on the data.
func TestGuardCarriesEpoch(t *testing.T) {
	t.Parallel()
	db, _, state := carryFixture(t)
	ctx := t.Context()
	inv := `SELECT string_agg(format('%s %s %s', sku, quantity, writer_epoch), ', ' ORDER BY sku) FROM inventory`
	stock := `SELECT string_agg(format('%s %s %s %s', id, shelf, spare, writer_epoch), ', ' ORDER BY id) FROM stock`
	all := func() string {
		return state(inv) + " | " + state(stock) + " | " + state(`SELECT count(*)::text FROM orders`)
	}

	for _, tc := range []struct {
		name, stmt string
		args       []any
		fresh      string // the state after the fresh epoch (9)
	}{
		{"audit trigger on orders updates inventory", "INSERT INTO orders VALUES ($1, 'widget', 3)", []any{1},
			"bolt 4 5, widget 7 9 | 1 1 2 5, 2 2 3 5 | 1"},
		{"trigger-made INSERT is stamped", "INSERT INTO returns VALUES (1, 'nut')", nil,
			"bolt 4 5, nut 1 9, widget 7 9 | 1 1 2 5, 2 2 3 5 | 1"},
		{"ON DELETE CASCADE", "DELETE FROM shelf WHERE id = 1", nil,
			"bolt 4 5, nut 1 9, widget 7 9 | 2 2 3 5 | 1"},
		{"ON DELETE SET NULL", "DELETE FROM shelf WHERE id = 3", nil,
			"bolt 4 5, nut 1 9, widget 7 9 | 2 2  9 | 1"},
		{"ON UPDATE SET DEFAULT", "UPDATE shelf SET id = 5 WHERE id = 2", nil,
			"bolt 4 5, nut 1 9, widget 7 9 | 2 0  9 | 1"},
		{"a called function writes inventory", "SELECT sell('bolt')", nil,
			"bolt 3 9, nut 1 9, widget 7 9 | 2 0  9 | 1"},
	} {
		before := all()
		// No epoch: refused before anything is sent.
		_, err := db.ExecContext(ctx, tc.stmt, tc.args...)
		if !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Errorf("%s, no epoch: %v, want ErrUnfenced", tc.name, err)
		}
		// Stale: epoch 4 is below the rows' 5 (9 after earlier cases). An INSERT
		// has no row to compare: it is only stamped (checked with the fresh epoch).
		if !strings.Contains(tc.name, "INSERT") {
			_, err = db.ExecContext(sqlfence.WithEpoch(ctx, 4), tc.stmt, tc.args...)
			var fe *sqlfence.Error
			if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.Code != "SF101" || fe.Epoch != 4 || !fe.HasStored {
				t.Errorf("%s, stale epoch: %v, want ErrFenced SF101 with both epochs", tc.name, err)
			}
			if got := all(); got != before {
				t.Errorf("%s, stale epoch changed the data:\n got %s\nwant %s", tc.name, got, before)
			}
		}
		if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 9), tc.stmt, tc.args...); err != nil {
			t.Errorf("%s, fresh epoch: %v", tc.name, err)
		}
		if got := all(); got != tc.fresh {
			t.Errorf("%s, fresh epoch:\n got %s\nwant %s", tc.name, got, tc.fresh)
		}
	}
	// Strict mode: the trigger's write of a row this epoch wrote before.
	_, err := db.ExecContext(sqlfence.WithEpoch(ctx, 9), "INSERT INTO orders VALUES (2, 'widget', 1)")
	if !errors.Is(err, sqlfence.ErrAlreadyWritten) {
		t.Errorf("strict, same epoch again: %v, want ErrAlreadyWritten", err)
	}
}

// TestGuardCarriesPrepared: a prepared statement and a transaction carry the epoch too.
func TestGuardCarriesPrepared(t *testing.T) {
	t.Parallel()
	db, _, state := carryFixture(t)
	ctx := t.Context()
	st, err := db.PrepareContext(ctx, "INSERT INTO orders VALUES ($1, 'widget', 1)")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(sqlfence.WithEpoch(ctx, 7), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(sqlfence.WithEpoch(ctx, 6), 2); !errors.Is(err, sqlfence.ErrFenced) {
		t.Errorf("prepared, stale: %v", err)
	}
	if _, err := st.ExecContext(sqlfence.WithEpoch(ctx, 8), 3); err != nil {
		t.Fatal(err)
	}
	if got, want := state(`SELECT format('%s %s', quantity, writer_epoch) FROM inventory WHERE sku = 'widget'`), "8 8"; got != want {
		t.Errorf("widget = %s, want %s", got, want)
	}
	if got := state(`SELECT string_agg(id::text, ',' ORDER BY id) FROM orders`); got != "1,3" {
		t.Errorf("orders = %s", got)
	}
}

// TestGuardCarriedForged: a carried marker sent from a plain session, or from one
// that sets the driver's setting but carries no epoch for the table, is rejected.
func TestGuardCarriedForged(t *testing.T) {
	t.Parallel()
	_, dsn, state := carryFixture(t)
	ctx := context.Background()
	raw := clitest.PGConnect(t, dsn, nil)
	v := state(`SELECT pg_sequence_last_value('sqlfence.catalog_version')::text`)
	for _, q := range []string{
		"/*sqlfence fenced: =99 @" + v + " +inventory:r*/ INSERT INTO orders VALUES (10, 'widget', 1)",
		"/*sqlfence fenced: =99 @" + v + " +inventory:r*/ UPDATE inventory SET quantity = 0",
		"/*sqlfence fenced: =99 @" + v + " inventory*/ UPDATE inventory SET quantity = 0",
	} {
		if _, err := raw.Exec(ctx, q); pgCode(err) != "SF001" {
			t.Errorf("%s: %v, want SF001", q, err)
		}
	}
	if _, err := raw.Exec(ctx, "SET sqlfence.fenced = on"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		// Carried for another table only, and an old catalog version.
		"/*sqlfence fenced: =99 @" + v + " +stock:r*/ INSERT INTO orders VALUES (11, 'widget', 1)",
		"/*sqlfence fenced: =99 @1 +inventory:r*/ INSERT INTO orders VALUES (12, 'widget', 1)",
	} {
		if _, err := raw.Exec(ctx, q); pgCode(err) != "SF001" && pgCode(err) != "SF005" {
			t.Errorf("%s: %v, want SF001 or SF005", q, err)
		}
	}
	if got := state(`SELECT format('%s %s', quantity, writer_epoch) FROM inventory WHERE sku = 'widget'`); got != "10 5" {
		t.Errorf("widget = %s, want 10 5 (nothing written)", got)
	}
	if strings.Contains(state(`SELECT count(*)::text FROM orders`), "1") {
		t.Errorf("orders were written")
	}
}

// TestGuardCarriesClaim: under a claim, the epoch the statement carries comes with its
// claim check: a trigger's write under the current claim applies and is stamped with
// the claim's epoch; once the claim is superseded the same statement is fenced
// (SF102, the claim superseded) and writes nothing, although the row's own epoch is
// still below the old claim's; the successor's claim then writes.
func TestGuardCarriesClaim(t *testing.T) {
	t.Parallel()
	db, dsn, state := carryFixture(t)
	ctx := t.Context()
	raw := clitest.PGConnect(t, dsn, nil)
	if _, err := raw.Exec(ctx, `CREATE TABLE jobs (id int PRIMARY KEY, lease_epoch bigint NOT NULL); INSERT INTO jobs VALUES (1, 7)`); err != nil {
		t.Fatal(err)
	}
	widget := `SELECT format('%s %s', quantity, writer_epoch) FROM inventory WHERE sku = 'widget'`
	claim := func(epoch int64) context.Context {
		return sqlfence.WithClaim(ctx, sqlfence.Claim{Table: "public.jobs", Key: 1, Epoch: epoch})
	}
	// An unqualified claim table the policy does not list: the guard, which reads the
	// claim row under its own search_path, could not name it, so sqlfence refuses.
	_, err := db.ExecContext(sqlfence.WithClaim(ctx, sqlfence.Claim{Table: "jobs", Key: 1, Epoch: 7}), "INSERT INTO orders VALUES (9, 'widget', 3)")
	if !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), "claims:") {
		t.Errorf("unqualified claim table: %v, want a refusal that says to list it under claims:", err)
	}
	if _, err := db.ExecContext(claim(7), "INSERT INTO orders VALUES (1, 'widget', 3)"); err != nil {
		t.Fatalf("current claim: %v", err)
	}
	if got := state(widget); got != "7 7" {
		t.Fatalf("widget = %s after the current claim's write, want 7 7", got)
	}
	if _, err := raw.Exec(ctx, `UPDATE jobs SET lease_epoch = 8 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	// Strict mode would also refuse epoch 7 again on the row; a row the claim has
	// not written yet shows the claim check alone: bolt is at 5.
	_, err = db.ExecContext(claim(7), "INSERT INTO orders VALUES (2, 'bolt', 1)")
	var fe *sqlfence.Error
	if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.Code != "SF102" {
		t.Errorf("superseded claim: %v, want ErrFenced SF102", err)
	}
	if got := state(`SELECT format('%s %s', quantity, writer_epoch) FROM inventory WHERE sku = 'bolt'`); got != "4 5" {
		t.Errorf("bolt = %s after the superseded claim, want 4 5 (nothing written)", got)
	}
	if got := state(`SELECT count(*)::text FROM orders`); got != "1" {
		t.Errorf("orders = %s after the superseded claim, want 1", got)
	}
	if _, err := db.ExecContext(claim(8), "INSERT INTO orders VALUES (3, 'bolt', 1)"); err != nil {
		t.Fatalf("successor's claim: %v", err)
	}
	if got := state(`SELECT format('%s %s', quantity, writer_epoch) FROM inventory WHERE sku = 'bolt'`); got != "3 8" {
		t.Errorf("bolt = %s after the successor's write, want 3 8", got)
	}
}

// TestGuardCarriesExact: exact accounting changes nothing for a carried write. The
// guard fails the whole statement on the first stale row the server writes on the
// statement's behalf, so there is no partial write to count: a stale epoch is fenced
// (SF101, nothing written, no counts), a fresh one applies with no fenced rows
// reported; a bulk write of the protected table itself in the same session is still
// counted row by row.
func TestGuardCarriesExact(t *testing.T) {
	t.Parallel()
	db, _, state := carryFixture(t)
	ctx := sqlfence.WithExactAccounting(t.Context())
	stock := `SELECT string_agg(format('%s %s %s %s', id, shelf, spare, writer_epoch), ', ' ORDER BY id) FROM stock`
	shelf := `SELECT string_agg(id::text, ',' ORDER BY id) FROM shelf`

	// Both cascades at once: shelf 1 deletes stock 1, shelf 3 empties stock 2's spare.
	const del = "DELETE FROM shelf WHERE id IN (1, 3)"
	_, err := db.ExecContext(sqlfence.WithEpoch(ctx, 4), del)
	var fe *sqlfence.Error
	if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.Code != "SF101" || fe.Epoch != 4 || fe.Affected != 0 || fe.Fenced != 0 {
		t.Errorf("stale, exact accounting: %v (%+v), want ErrFenced SF101 with no counts", err, fe)
	}
	if got, want := state(stock)+" | "+state(shelf), "1 1 2 5, 2 2 3 5 | 0,1,2,3"; got != want {
		t.Errorf("stale epoch changed the data:\n got %s\nwant %s", got, want)
	}
	res, err := db.ExecContext(sqlfence.WithEpoch(ctx, 9), del)
	if err != nil {
		t.Fatalf("fresh, exact accounting: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("fresh: %d rows affected, want 2 (the shelf rows)", n)
	}
	if got, want := state(stock)+" | "+state(shelf), "2 2  9 | 0,2"; got != want {
		t.Errorf("fresh epoch:\n got %s\nwant %s", got, want)
	}

	// The protected table written directly, one row newer than the epoch: counted.
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 9), "INSERT INTO stock (id, shelf) VALUES (3, 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 10), "UPDATE stock SET spare = 0 WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(sqlfence.WithEpoch(ctx, 9), "UPDATE stock SET spare = 2")
	if !errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &fe) || fe.Affected != 1 || fe.Fenced != 1 {
		t.Errorf("bulk write, exact accounting: %v (%+v), want ErrFenced with 1 affected and 1 fenced", err, fe)
	}
	if got, want := state(stock), "2 2 2 9, 3 0 0 10"; got != want {
		t.Errorf("bulk write:\n got %s\nwant %s", got, want)
	}
}
