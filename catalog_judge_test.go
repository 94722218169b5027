package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// The tests of resolve: catalog's snapshot: what the catalog shows about how a
// statement writes a protected table without naming it. Each sets the database up
// through the raw handle, as a migration would, then sends statements through the
// fenced handle with no epoch, a stale one (3) and a fresh one (7) against rows
// written at epoch 5, and judges the outcome on the data.

const snapshotInventory = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO inventory VALUES ('a', 10, 5), ('b', 20, 5);
CREATE TABLE log (msg text);
`

const snapshotInventoryState = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`

type snapshotFixture struct {
	raw, fenced *sql.DB
}

// newSnapshotFixture sets a fresh database up with setup and opens a fenced handle
// with sqlfence.NewConnector over pgx's connector and the policy (YAML), which must
// say resolve: catalog.
func newSnapshotFixture(t *testing.T, setup, policy string) *snapshotFixture {
	t.Helper()
	dsn, raw := newRawDB(t, setup)
	pol, err := sqlfence.ParsePolicy([]byte(policy), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fenced := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	t.Cleanup(func() { fenced.Close() })
	if err := fenced.Ping(); err != nil {
		t.Fatalf("first connection (reads the catalog): %v", err)
	}
	return &snapshotFixture{raw: raw, fenced: fenced}
}

func (f *snapshotFixture) state(t *testing.T, query string) string {
	t.Helper()
	var s sql.NullString
	if err := f.raw.QueryRow(query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s.String
}

// epochs are the three contexts every statement is sent under.
var snapshotEpochs = []struct {
	name string
	ctx  context.Context
}{
	{"no epoch", context.Background()},
	{"stale epoch 3", sqlfence.WithEpoch(context.Background(), 3)},
	{"fresh epoch 7", sqlfence.WithEpoch(context.Background(), 7)},
}

// refused sends stmt under every epoch and wants ErrRefused, with a message that
// mentions every one of want, and every state query unchanged.
func (f *snapshotFixture) refused(t *testing.T, stmt string, states []string, want ...string) {
	t.Helper()
	before := make([]string, len(states))
	for i, q := range states {
		before[i] = f.state(t, q)
	}
	for _, e := range snapshotEpochs {
		_, err := f.fenced.ExecContext(e.ctx, stmt)
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%s (%s): err = %v, want ErrRefused", stmt, e.name, err)
			continue
		}
		if p := codeProblem(err); p != "" {
			t.Errorf("%s (%s): %s", stmt, e.name, p)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s (%s): the refusal does not say %q: %v", stmt, e.name, w, err)
			}
		}
	}
	for i, q := range states {
		if after := f.state(t, q); after != before[i] {
			t.Errorf("%s changed the data although refused: %s: %q, was %q", stmt, q, after, before[i])
		}
	}
}

// passes sends stmt under every epoch and wants no error.
func (f *snapshotFixture) passes(t *testing.T, stmt string) {
	t.Helper()
	for _, e := range snapshotEpochs {
		if _, err := f.fenced.ExecContext(e.ctx, stmt); err != nil {
			t.Errorf("%s (%s): %v, want it to run", stmt, e.name, err)
		}
	}
}

// fencedWrite sends a write that reaches the protected rows: without an epoch it is
// unfenced, with the stale one fenced, with the fresh one it lands stamped 7.
func (f *snapshotFixture) fencedWrite(t *testing.T, stmt, state, want string) {
	t.Helper()
	before := f.state(t, state)
	if _, err := f.fenced.ExecContext(snapshotEpochs[0].ctx, stmt); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Errorf("%s without an epoch: err = %v, want ErrUnfenced", stmt, err)
	}
	if _, err := f.fenced.ExecContext(snapshotEpochs[1].ctx, stmt); !errors.Is(err, sqlfence.ErrFenced) {
		t.Errorf("%s with the stale epoch: err = %v, want ErrFenced", stmt, err)
	}
	if after := f.state(t, state); after != before {
		t.Errorf("%s: without or with a stale epoch the data changed: %q, was %q", stmt, after, before)
	}
	if _, err := f.fenced.ExecContext(snapshotEpochs[2].ctx, stmt); err != nil {
		t.Errorf("%s with the fresh epoch: %v", stmt, err)
	}
	if got := f.state(t, state); got != want {
		t.Errorf("%s with the fresh epoch: %q, want %q", stmt, got, want)
	}
}

const inventoryPolicy = "version: 1\ncatalog_refresh: 1h\nresolve: catalog\ntables:\n  - name: inventory\n"

// TestSnapshotFunctions: a call of a VOLATILE user function or a procedure is judged
// by its body read from the catalog, transitively; STABLE functions and harmless
// volatile ones pass.
func TestSnapshotFunctions(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, snapshotInventory+`
		CREATE FUNCTION sql_writer() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 $$;
		CREATE FUNCTION plpgsql_writer() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory WHERE sku = 'a'; END $$;
		CREATE FUNCTION atomic_writer() RETURNS void LANGUAGE sql BEGIN ATOMIC INSERT INTO inventory (sku, quantity) VALUES ('z', 1); END;
		CREATE FUNCTION via_other() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; PERFORM sql_writer(); END $$;
		CREATE FUNCTION via_two() RETURNS int LANGUAGE sql AS $$ SELECT via_other(); SELECT 1 $$;
		CREATE SCHEMA tools;
		CREATE FUNCTION tools.lower(text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = -1; RETURN $1; END $$;
		CREATE PROCEDURE restock() LANGUAGE sql AS $$ UPDATE inventory SET quantity = 100 $$;
		CREATE FUNCTION dynamic() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'SELECT 1'; END $$;
		CREATE FUNCTION backslashes() RETURNS void LANGUAGE sql SET standard_conforming_strings = off AS $$ SELECT 1 $$;
		CREATE FUNCTION note(m text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN INSERT INTO log VALUES (m); END $$;
		CREATE PROCEDURE note_proc(m text) LANGUAGE sql AS $$ INSERT INTO log VALUES (m) $$;
		CREATE FUNCTION total() RETURNS int STABLE LANGUAGE sql AS $$ SELECT sum(quantity)::int FROM inventory $$;
		CREATE FUNCTION stable_wrapper() RETURNS int STABLE LANGUAGE plpgsql AS $$ BEGIN PERFORM plpgsql_writer(); RETURN 1; END $$;`,
		inventoryPolicy)
	states := []string{snapshotInventoryState}
	f.refused(t, `SELECT sql_writer()`, states, "public.sql_writer writes the protected table")
	f.refused(t, `SELECT plpgsql_writer()`, states, "public.plpgsql_writer")
	f.refused(t, `SELECT atomic_writer()`, states, "public.atomic_writer")
	f.refused(t, `SELECT via_other()`, states, "the function public.via_other calls public.sql_writer")
	f.refused(t, `SELECT * FROM via_two()`, states, "public.via_two calls public.via_other, which calls public.sql_writer")
	f.refused(t, `SELECT lower('X')`, states, "tools.lower") // a user function shadowing a built-in's name
	f.refused(t, `SELECT tools.lower('X')`, states, "tools.lower")
	f.refused(t, `CALL restock()`, states, "the procedure public.restock")
	f.refused(t, `SELECT dynamic()`, states, "dynamic SQL")
	f.refused(t, `SELECT backslashes()`, states, "standard_conforming_strings")
	f.refused(t, `SELECT stable_wrapper()`, states, "public.stable_wrapper calls public.plpgsql_writer")
	f.refused(t, `SELECT no_such_function()`, states, "no function of that name")

	f.passes(t, `SELECT note('hello')`)
	f.passes(t, `CALL note_proc('hello')`)
	f.passes(t, `SELECT total()`)
	f.passes(t, `SELECT pg_catalog.lower('X')`)
	if got := f.state(t, `SELECT count(*)::text FROM log`); got != "6" {
		t.Errorf("log rows = %s, want 6 (note and note_proc ran under every epoch)", got)
	}
	if got := f.state(t, snapshotInventoryState); got != "a:10:5 b:20:5" {
		t.Errorf("inventory = %q, want it untouched", got)
	}
}

// TestSnapshotCascades: a foreign key whose action writes a protected table makes
// DELETE and UPDATE of its parent refused, whether the parent is protected or not.
func TestSnapshotCascades(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, `
		CREATE TABLE warehouse (id int PRIMARY KEY, name text);
		CREATE TABLE supplier (id int PRIMARY KEY, name text);
		CREATE TABLE category (id int PRIMARY KEY, name text);
		CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0,
			warehouse int REFERENCES warehouse ON DELETE CASCADE,
			supplier int REFERENCES supplier ON DELETE SET NULL,
			category int REFERENCES category ON UPDATE CASCADE);
		CREATE TABLE lots (id int PRIMARY KEY, sku text REFERENCES inventory ON DELETE CASCADE, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO warehouse VALUES (1, 'w'); INSERT INTO supplier VALUES (1, 's'); INSERT INTO category VALUES (1, 'c');
		INSERT INTO inventory VALUES ('a', 10, 5, 1, 1, 1), ('b', 20, 5, 1, 1, 1);
		INSERT INTO lots VALUES (1, 'a', 5);`,
		"version: 1\ncatalog_refresh: 1h\nresolve: catalog\ntables:\n  - name: inventory\n  - name: lots\n")
	inv := `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch || ':' || coalesce(warehouse, 0) || coalesce(supplier, 0) || coalesce(category, 0), ' ' ORDER BY sku) FROM inventory`
	states := []string{inv, `SELECT string_agg(id::text, ',') FROM warehouse`, `SELECT string_agg(id::text, ',') FROM supplier`,
		`SELECT string_agg(id::text, ',') FROM category`, `SELECT string_agg(id || ':' || writer_epoch, ',') FROM lots`}
	f.refused(t, `DELETE FROM warehouse WHERE id = 1`, states, "public.warehouse", "cascades into the protected table public.inventory",
		"ON DELETE CASCADE", "NO ACTION or RESTRICT")
	f.refused(t, `DELETE FROM supplier`, states, "ON DELETE SET NULL")
	f.refused(t, `UPDATE category SET id = 2 WHERE id = 1`, states, "ON UPDATE CASCADE")
	f.refused(t, `MERGE INTO warehouse w USING (SELECT 1 AS id) s ON w.id = s.id WHEN MATCHED THEN DELETE`, states, "public.warehouse")
	f.refused(t, `WITH d AS (DELETE FROM warehouse RETURNING id) SELECT count(*) FROM d`, states, "public.warehouse")
	// A fenced protected parent: the fence covers inventory's rows, not the cascade into lots.
	f.refused(t, `DELETE FROM inventory WHERE sku = 'a'`, states, "cascades into the protected table public.lots")
	// The actions that write nothing pass: warehouse has no ON UPDATE action.
	f.passes(t, `UPDATE warehouse SET name = 'renamed'`)
	f.passes(t, `INSERT INTO category VALUES (2, 'new') ON CONFLICT DO NOTHING`)
	f.refused(t, `INSERT INTO category VALUES (1, 'c') ON CONFLICT (id) DO UPDATE SET id = 3`, states, "ON UPDATE CASCADE")
	if got := f.state(t, inv); got != "a:10:5:111 b:20:5:111" {
		t.Errorf("inventory = %q, want it untouched", got)
	}
}

// TestSnapshotTriggersAndRules: a trigger or rule on an unprotected table whose code
// writes a protected table makes the writes that fire it refused; a VOLATILE BEFORE
// trigger on a protected table makes writes to it refused; a STABLE one does not.
func TestSnapshotTriggersAndRules(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, snapshotInventory+`
		CREATE TABLE orders (id int);
		CREATE FUNCTION take_stock() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'; RETURN NEW; END $$;
		CREATE TRIGGER orders_take AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION take_stock();
		CREATE TABLE notes (id int);
		CREATE RULE notes_zero AS ON INSERT TO notes DO ALSO UPDATE inventory SET quantity = 0;
		CREATE TABLE audited (id int);
		CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO log VALUES (TG_OP); RETURN NULL; END $$;
		CREATE TRIGGER audited_log AFTER INSERT OR UPDATE ON audited FOR EACH ROW EXECUTE FUNCTION audit();
		CREATE TABLE stock (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO stock VALUES ('a', 1, 5);
		CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.writer_epoch := 1000; RETURN NEW; END $$;
		CREATE TRIGGER stock_bump BEFORE UPDATE ON stock FOR EACH ROW EXECUTE FUNCTION bump();
		CREATE TABLE shelf (sku text PRIMARY KEY, quantity int NOT NULL, note text, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO shelf VALUES ('a', 1, '', 5);
		CREATE FUNCTION mark() RETURNS trigger STABLE LANGUAGE plpgsql AS $$ BEGIN NEW.note := 'marked'; RETURN NEW; END $$;
		CREATE TRIGGER shelf_mark BEFORE UPDATE ON shelf FOR EACH ROW EXECUTE FUNCTION mark();
		CREATE TABLE rack (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO rack VALUES ('a', 1, 5);
		CREATE FUNCTION keep_low() RETURNS trigger STABLE LANGUAGE plpgsql AS $$ BEGIN NEW.writer_epoch := 0; RETURN NEW; END $$;
		CREATE TRIGGER rack_low BEFORE UPDATE ON rack FOR EACH ROW EXECUTE FUNCTION keep_low();`,
		"version: 1\ncatalog_refresh: 1h\nresolve: catalog\ntables:\n  - name: inventory\n  - name: stock\n  - name: shelf\n  - name: rack\n")
	states := []string{snapshotInventoryState, `SELECT count(*)::text FROM orders`, `SELECT count(*)::text FROM notes`,
		`SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ') FROM stock`}
	f.refused(t, `INSERT INTO orders VALUES (1)`, states, "INSERT of orders", "trigger orders_take", "public.take_stock", "cannot carry the epoch")
	f.refused(t, `COPY orders FROM STDIN`, states, "trigger orders_take")
	f.refused(t, `INSERT INTO notes VALUES (1)`, states, "rule notes_zero", "inventory")
	f.refused(t, `UPDATE stock SET quantity = 2`, states, "BEFORE trigger stock_bump", "function public.bump", "may not mention the epoch column")
	// STABLE changes nothing: setting NEW.writer_epoch is not a database write.
	f.refused(t, `UPDATE rack SET quantity = 2`, states, "BEFORE trigger rack_low", "function public.keep_low")
	f.passes(t, `UPDATE orders SET id = 2`) // the trigger fires on INSERT only
	f.passes(t, `INSERT INTO audited VALUES (1)`)
	if got := f.state(t, `SELECT count(*)::text FROM log`); got != "3" {
		t.Errorf("log rows = %s, want 3 from the harmless trigger", got)
	}
	f.fencedWrite(t, `UPDATE shelf SET quantity = 2`, `SELECT string_agg(sku || ':' || quantity || ':' || note || ':' || writer_epoch, ' ') FROM shelf`, "a:2:marked:7")
}

// TestSnapshotViewsAndParents: a view over a view over a protected table is fenced
// when it shows the epoch column and refused when it does not; a parent of a
// protected partition is fenced like it; an inheritance parent without the epoch
// column is refused.
func TestSnapshotViewsAndParents(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, snapshotInventory+`
		CREATE VIEW stock AS SELECT * FROM inventory;
		CREATE VIEW stock_a AS SELECT * FROM stock WHERE sku = 'a';
		CREATE VIEW stock_a_plain AS SELECT sku, quantity FROM stock_a;
		CREATE TABLE events (id int, at date NOT NULL, note text, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (at);
		CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
		CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');
		INSERT INTO events VALUES (1, '2026-05-01', '', 5);
		CREATE TABLE items_base (id int, name text);
		CREATE TABLE items (writer_epoch bigint NOT NULL DEFAULT 0) INHERITS (items_base);
		INSERT INTO items VALUES (1, 'x', 5);`,
		"version: 1\ncatalog_refresh: 1h\nresolve: catalog\ntables:\n  - name: inventory\n  - name: events_2026\n  - name: items\n")
	f.fencedWrite(t, `UPDATE stock_a SET quantity = 0`, snapshotInventoryState, "a:0:7 b:20:5")
	f.refused(t, `UPDATE stock_a_plain SET quantity = 1`, []string{snapshotInventoryState}, "stock_a_plain")
	f.fencedWrite(t, `UPDATE events SET note = 'n'`, `SELECT string_agg(id || ':' || note || ':' || writer_epoch, ' ') FROM events`, "1:n:7")
	f.refused(t, `TRUNCATE events`, []string{`SELECT count(*)::text FROM events`}, "TRUNCATE")
	items := `SELECT string_agg(id || ':' || name || ':' || writer_epoch, ' ') FROM items`
	f.refused(t, `DELETE FROM items_base`, []string{items}, "public.items_base", "partition or inheritance child")
	f.refused(t, `UPDATE items_base SET name = 'y'`, []string{items}, "public.items_base")
}

// TestSnapshotRefreshAfterDDL: with ddl: allow, DDL through the driver makes the
// connector read the catalog again, and no decision made under the old snapshot is
// reused — not from the shared cache, not from the connection's memo.
func TestSnapshotRefreshAfterDDL(t *testing.T) {
	t.Parallel()
	f := newSnapshotFixture(t, snapshotInventory+`
		CREATE TABLE orders (id int);
		CREATE FUNCTION take_stock() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'; RETURN NEW; END $$;
		CREATE TRIGGER orders_take AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION take_stock();`,
		inventoryPolicy+"ddl: allow\n")
	ctx := sqlfence.WithEpoch(context.Background(), 7)
	c, err := f.fenced.Conn(ctx) // one connection: its memo must be dropped too
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `SELECT late_note('x')`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("a function that does not exist yet: err = %v, want ErrRefused", err)
	}
	if _, err := c.ExecContext(ctx, `CREATE FUNCTION late_note(m text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN INSERT INTO log VALUES (m); END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `SELECT late_note('x')`); err != nil {
		t.Errorf("the function created through the driver: %v, want it to run", err)
	}
	// Another connection sees it too (the connector's enforcer was swapped).
	if _, err := f.fenced.ExecContext(ctx, `SELECT late_note('y')`); err != nil {
		t.Errorf("the function, on another connection: %v", err)
	}

	// Inside a transaction: the connection sees its own DDL at once; after ROLLBACK
	// the function is gone again.
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE FUNCTION tx_note() RETURNS void LANGUAGE sql AS $$ INSERT INTO log VALUES ('tx') $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT tx_note()`); err != nil {
		t.Errorf("a function created earlier in the transaction: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `SELECT tx_note()`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Errorf("the function after ROLLBACK: err = %v, want ErrRefused (no such function)", err)
	}

	// The same with BEGIN and ROLLBACK as statements, and DDL sent with Query.
	for _, stmt := range []string{`BEGIN`, `CREATE FUNCTION sql_tx_note() RETURNS void LANGUAGE sql AS $$ INSERT INTO log VALUES ('tx') $$`} {
		if _, err := c.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := c.QueryContext(ctx, `CREATE FUNCTION sql_tx_note2() RETURNS void LANGUAGE sql AS $$ SELECT sql_tx_note() $$`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if _, err := c.ExecContext(ctx, `SELECT sql_tx_note2()`); err != nil {
		t.Errorf("a function created with Query earlier in the transaction: %v", err)
	}
	if _, err := c.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `SELECT sql_tx_note2()`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Errorf("the function after ROLLBACK: err = %v, want ErrRefused (no such function)", err)
	}

	// A trigger dropped through the driver no longer refuses the writes it fired on.
	f.refused(t, `INSERT INTO orders VALUES (1)`, []string{snapshotInventoryState}, "trigger orders_take")
	if _, err := c.ExecContext(ctx, `INSERT INTO orders VALUES (1)`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("INSERT INTO orders on the connection: err = %v, want ErrRefused", err)
	}
	if _, err := c.ExecContext(ctx, `DROP TRIGGER orders_take ON orders`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO orders VALUES (1)`); err != nil {
		t.Errorf("INSERT INTO orders after the trigger was dropped: %v", err)
	}
	if got := f.state(t, snapshotInventoryState); got != "a:10:5 b:20:5" {
		t.Errorf("inventory = %q, want it untouched", got)
	}
}

// TestSnapshotCheckCatalog: what `sqlfence guard` reports.
func TestSnapshotCheckCatalog(t *testing.T) {
	t.Parallel()
	_, raw := newRawDB(t, snapshotInventory+`
		CREATE TABLE warehouse (id int PRIMARY KEY);
		CREATE TABLE lots (id int, warehouse int REFERENCES warehouse ON DELETE CASCADE, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE orders (id int);
		CREATE FUNCTION take_stock() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
		CREATE TRIGGER orders_take AFTER UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION take_stock();
		CREATE TABLE notes (id int);
		CREATE RULE notes_zero AS ON DELETE TO notes DO ALSO DELETE FROM inventory;`)
	pol, err := sqlfence.ParsePolicy([]byte("version: 1\ncatalog_refresh: 1h\ntables:\n  - name: inventory\n  - name: lots\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	findings, err := pol.CheckCatalog(context.Background(), func(ctx context.Context, query string, args ...any) ([][]any, error) {
		rows, err := raw.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, err
			}
			out = append(out, vals)
		}
		return out, rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range findings {
		got[f.Kind+" "+f.Name+" on "+f.Relation] = f.Events + ": " + f.Message
		if want := map[string]string{"foreign key": "SF501", "trigger": "SF502", "rule": "SF503"}[f.Kind]; f.Code != want {
			t.Errorf("finding %s %s: code %q, want %s", f.Kind, f.Name, f.Code, want)
		}
	}
	for k, want := range map[string]string{
		"foreign key lots_warehouse_fkey on public.warehouse": "cascades into the protected table public.lots",
		"trigger orders_take on public.orders":                "writes the protected table",
		"rule notes_zero on public.notes":                     "inventory",
	} {
		if !strings.Contains(got[k], want) {
			t.Errorf("finding %q = %q, want it to say %q (all: %v)", k, got[k], want, got)
		}
	}
}
