package sqlfence_test

import (
	"testing"
)

// The tests of what the server runs for a name (issue classes: attribute notation,
// built-in names, volatility, PL/pgSQL assignment targets, columns through views),
// judged on the data with no, a stale and a fresh epoch (snapshotFixture), with the
// refusal's reason. testdata/attacks/server_reading.sql has the adversarial cases.

const readingSetup = snapshotInventory + `
	CREATE TABLE staging (sku text, q int);
	INSERT INTO staging VALUES ('a', 1);
	INSERT INTO inventory VALUES ('c', 30, 5);
	CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
	CREATE FUNCTION tag(staging) RETURNS text LANGUAGE sql AS $$ SELECT $1.sku || '!' $$;
	CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
	CREATE FUNCTION public.lower(int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -2; RETURN $1; END $$;
	CREATE FUNCTION stable_execute() RETURNS int STABLE LANGUAGE plpgsql AS $$ DECLARE r int; BEGIN EXECUTE 'SELECT writer()' INTO r; RETURN r; END $$;
	CREATE FUNCTION immutable_call() RETURNS int IMMUTABLE LANGUAGE sql AS $$ SELECT writer() $$;
	CREATE FUNCTION stable_xml() RETURNS xml STABLE LANGUAGE sql AS $$ SELECT query_to_xml('SELECT 1', false, false, '') $$;
	CREATE FUNCTION stable_reader() RETURNS int STABLE LANGUAGE sql AS $$ SELECT count(*)::int FROM inventory $$;
	CREATE FUNCTION subscript_writer() RETURNS int LANGUAGE plpgsql AS $$ DECLARE a int[] := '{1,2}'; BEGIN a[1:writer()] := '{3}'; RETURN 1; END $$;
	ALTER TABLE inventory ADD COLUMN shadow bigint NOT NULL DEFAULT 0;
	CREATE VIEW stock_shadow AS SELECT sku, quantity, shadow AS writer_epoch FROM inventory;
	CREATE VIEW stock_computed AS SELECT sku, quantity, writer_epoch + 0 AS writer_epoch FROM inventory;
	CREATE VIEW stock_over_shadow AS SELECT * FROM stock_shadow;
	CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
	CREATE VIEW stock_renamed (code, amount, writer_epoch) AS SELECT sku, quantity, writer_epoch FROM inventory;
	CREATE VIEW stock_over_stock AS SELECT * FROM stock;
	CREATE FUNCTION my_abs(int) RETURNS int IMMUTABLE LANGUAGE internal AS 'int4abs';
	CREATE FUNCTION my_abs_volatile(int) RETURNS int VOLATILE LANGUAGE internal AS 'int4abs';
	CREATE TABLE ledger (id int, settle int);
	INSERT INTO ledger VALUES (1, 2);
	CREATE FUNCTION settle(ledger) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -4; RETURN 1; END $$;
	CREATE FUNCTION grab(anyelement) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -5; RETURN 1; END $$;
	CREATE FUNCTION grab_text(text) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -6; RETURN 1; END $$;`

// TestServerReadingCatalog: with resolve: catalog, every call the server makes of a
// name is judged as the function it reaches.
func TestServerReadingCatalog(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, readingSetup, inventoryPolicy)
	states := []string{snapshotInventoryState}

	// Attribute notation, in every syntax and statement that runs an expression.
	for _, q := range []string{
		`SELECT s.zap FROM staging s`,
		`SELECT (s).zap FROM staging s`,
		`SELECT public.staging.zap FROM public.staging`,
		`UPDATE staging s SET q = s.zap`,
		`UPDATE inventory SET quantity = (SELECT s.zap FROM staging s) WHERE sku = 'a'`,
		`COPY (SELECT s.zap FROM staging s) TO STDOUT`,
		`DECLARE c CURSOR WITH HOLD FOR SELECT s.zap FROM staging s`,
		`EXPLAIN ANALYZE SELECT (s).zap FROM staging s`,
	} {
		f.refused(t, q, states, "attribute notation", "public.zap writes the protected table")
	}
	f.refused(t, `SELECT l.grab FROM ledger l`, states, "public.grab writes")                      // any row is an anyelement
	f.refused(t, `SELECT (l.id::text).grab_text FROM ledger l`, states, "public.grab_text writes") // (x).f takes any value
	// t.f is the column when t has one: settle(ledger) is not reachable as l.settle,
	// and grab_text(text) takes no row.
	f.passes(t, `SELECT l.settle, s.grab_text FROM ledger l, (SELECT 1 AS grab_text) s`)
	f.passes(t, `SELECT s.tag, s.sku, (s).q FROM staging s`) // a harmless function, columns
	f.passes(t, `SELECT i.sku, i.quantity, i.writer_epoch FROM inventory i ORDER BY i.sku`)

	// A built-in's name reaches the user function that overloads it.
	f.refused(t, `SELECT lower(1)`, states, "public.lower writes the protected table")
	f.passes(t, `SELECT pg_catalog.lower('X')`)

	// Volatility is not proof.
	f.refused(t, `SELECT stable_execute()`, states, "public.stable_execute", "dynamic SQL")
	f.refused(t, `SELECT immutable_call()`, states, "public.immutable_call calls public.writer")
	f.refused(t, `SELECT stable_xml()`, states, "public.stable_xml", "query_to_xml")
	f.passes(t, `SELECT stable_reader()`)
	// A function sqlfence cannot read is taken at its marking only in C or internal,
	// which only a superuser can create.
	f.passes(t, `SELECT my_abs(-1)`)
	f.refused(t, `SELECT my_abs_volatile(-1)`, states, "public.my_abs_volatile is VOLATILE and written in internal")

	// A subscript of an assignment target is an expression the server evaluates.
	f.refused(t, `SELECT subscript_writer()`, states, "public.subscript_writer calls public.writer")
	f.refused(t, `DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer()] := 1; END $$`, states, "public.writer")

	// Columns through views.
	f.refused(t, `UPDATE stock_shadow SET quantity = 0 WHERE sku = 'a'`, states, "SF310", "public.stock_shadow", "another column (", "shadow)") // PostgreSQL 16 and later print the view without the table name
	f.refused(t, `DELETE FROM stock_computed WHERE sku = 'b'`, states, "public.stock_computed", "a computed value")
	f.refused(t, `UPDATE stock_over_shadow SET quantity = 0`, states, "through the view public.stock_shadow")
	f.fencedWrite(t, `UPDATE stock SET quantity = 1 WHERE sku = 'a'`, snapshotInventoryState, "a:1:7 b:20:5 c:30:5")
	f.fencedWrite(t, `UPDATE stock_renamed SET amount = 2 WHERE code = 'b'`, snapshotInventoryState, "a:1:7 b:2:7 c:30:5")
	f.fencedWrite(t, `UPDATE stock_over_stock SET quantity = 3 WHERE sku = 'c'`, snapshotInventoryState, "a:1:7 b:2:7 c:3:7")
}

// TestServerReadingDefault: without the catalog, a name in column position is judged
// against what sqlfence knows by name (the policy's functions, the built-ins it
// refuses), and a subscript's call like any call of an unknown function.
func TestServerReadingDefault(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, readingSetup+`
		CREATE FUNCTION recalc(staging) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 RETURNING 1 $$;`,
		"version: 1\ntables:\n  - name: inventory\nfunctions:\n  - recalc\n")
	states := []string{snapshotInventoryState}
	f.refused(t, `SELECT s.recalc FROM staging s`, states, "attribute notation", "the policy lists")
	f.refused(t, `SELECT (s).recalc FROM staging s`, states, "attribute notation")
	f.refused(t, `SELECT (s.sku).ts_stat FROM staging s`, states, "runs the SQL text") // ts_stat(s.sku)
	f.refused(t, `SELECT ('').pg_create_restore_point`, states, "volatile built-in")
	f.passes(t, `SELECT s.system, s.ts_stat FROM (SELECT 1 AS system, 2 AS ts_stat) s`) // columns: a row is no argument of theirs
	f.refused(t, `DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer()] := 1; END $$`, states, "call of writer")
	f.refused(t, `DO $$ DECLARE a int[] := '{{1,2}}'; BEGIN a[1][1:writer()] := '{3}'; END $$`, states, "writer")
	f.passes(t, `SELECT s.sku, (s).q, i.quantity FROM staging s, inventory i`)
	f.passes(t, `DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[(1 = 1)::int] := 1; a[1:2] := '{3,4}'; END $$`)
}

// TestServerReadingOperators: with resolve: catalog an operator is a call of its
// function, named or implied by the syntax (IN, CASE x WHEN, JOIN USING, NULLIF), and
// judged for every user operator of its name: ops.= runs for = when search_path lists
// ops before pg_catalog.
func TestServerReadingOperators(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, snapshotInventory+`
	CREATE TABLE staging (sku text, q int);
	INSERT INTO staging VALUES ('a', 1);`+"\n"+`	CREATE FUNCTION wipe_pair(int, int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -3; RETURN true; END $$;
	CREATE OPERATOR public.<<>> (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe_pair);
	CREATE SCHEMA ops;
	CREATE OPERATOR ops.= (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe_pair);
	CREATE FUNCTION same(int, int) RETURNS bool LANGUAGE sql AS $$ SELECT $1 OPERATOR(pg_catalog.=) $2 $$;
	CREATE OPERATOR public.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq);
	CREATE OPERATOR public.==== (LEFTARG = int, RIGHTARG = int, FUNCTION = same);`, inventoryPolicy)
	states := []string{snapshotInventoryState}
	// Operators call their functions; an operator of a built-in's name may be the
	// one search_path finds.
	for _, q := range []string{
		`SELECT sku FROM staging WHERE q <<>> 1`,
		`SELECT sku FROM staging WHERE q OPERATOR(public.<<>>) 1`,
		`SELECT q = 1 FROM staging`,
		`SELECT sku FROM staging WHERE q IN (1, 2)`,
		`SELECT sku FROM staging WHERE q IN (SELECT 1)`,
		`SELECT CASE q WHEN 1 THEN 'one' END FROM staging`,
		`SELECT 1 FROM staging a JOIN staging b USING (q)`,
		`SELECT NULLIF(q, 1) FROM staging`,
	} {
		f.refused(t, q, states, "wipe_pair writes the protected table")
	}
	f.passes(t, `SELECT 1 === 1, 1 ==== 2, 1 OPERATOR(pg_catalog.=) 1`)
}
