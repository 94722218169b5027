package sqlfence_test

import "testing"

// TestSnapshotColumnNotation: qty(o) is PostgreSQL's functional notation for o.qty.
// With no function of that name in the catalog it passes, in every position; a
// function of that name, in any schema, makes it a call again, judged by its body,
// and so do a
// qualified name, two arguments and an aggregate's decorations.
func TestSnapshotColumnNotation(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, snapshotInventory+`
		CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, sku text);
		INSERT INTO orders VALUES (1, 3, 'a');
		CREATE FUNCTION restock(o orders) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 RETURNING 1 $$;
		CREATE SCHEMA tools;
		CREATE FUNCTION tools.sku(o orders) RETURNS text LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory; RETURN 'x'; END $$;`,
		inventoryPolicy)
	states := []string{snapshotInventoryState}
	f.passes(t, `SELECT qty(o) FROM orders o`)
	f.passes(t, `SELECT qty(o.*), id(o) FROM orders AS o WHERE qty(o) > 1 ORDER BY id(o)`)
	f.passes(t, `SELECT quantity(i) FROM inventory i`)
	f.passes(t, `UPDATE orders o SET qty = qty(o) + 1 WHERE id(o) = 1`)
	// A function of that name exists, in any schema: judged as the call the server
	// may make — also where the row has the column (orders.sku), which the server
	// would read first: sqlfence does not tell the row's columns here.
	f.refused(t, `SELECT restock(o) FROM orders o`, states, "public.restock writes the protected table")
	f.refused(t, `SELECT sku(o) FROM orders o`, states, "tools.sku")
	// Not the notation: a qualified name, two arguments, decorations.
	f.refused(t, `SELECT public.qty(o) FROM orders o`, states, "no function of that name")
	f.refused(t, `SELECT qty(o, 1) FROM orders o`, states, "no function of that name")
	f.refused(t, `SELECT qty(DISTINCT o) FROM orders o`, states, "no function of that name")
	f.refused(t, `SELECT qty(o) OVER () FROM orders o`, states, "no function of that name")
	f.refused(t, `SELECT qty(VARIADIC o) FROM orders o`, states, "no function of that name")
	f.refused(t, `SELECT qty('(1,2,a)'::orders)`, states, "no function of that name")
	if got := f.state(t, snapshotInventoryState); got != "a:10:5 b:20:5" {
		t.Errorf("inventory = %q, want it untouched", got)
	}
}
