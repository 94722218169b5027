package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
)

const allowlistPolicy = `
version: 1
tables:
  - name: inventory
  - name: billing.invoices
functions:
  - billing.recalc
safe_functions:
  - app.touch_report
claims:
  - table: jobs
`

// TestAllowlist: on a fenced connection a statement runs only when sqlfence can say
// what it does to protected tables. Each row is judged by Policy.Plan, the same
// analysis the driver runs; "pass" means sent unchanged, "fence" rewritten, a string
// is a word the refusal must contain.
func TestAllowlist(t *testing.T) {
	deny, err := sqlfence.ParsePolicy([]byte(allowlistPolicy), "")
	if err != nil {
		t.Fatal(err)
	}
	allow, err := sqlfence.ParsePolicy([]byte(allowlistPolicy+"ddl: allow\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sql   string
		deny  string // verdict under ddl: deny (the default)
		allow string // under ddl: allow; "" = same as deny
	}{
		// Reads, session statements, transaction control.
		{"SELECT * FROM inventory WHERE sku = $1", "pass", ""},
		{"SELECT now(), nextval('s'), gen_random_uuid(), pg_advisory_lock(1), pg_try_advisory_xact_lock(2)", "pass", ""},
		{"SELECT count(*) FROM information_schema.tables WHERE table_schema = CURRENT_SCHEMA() AND table_name = $1", "pass", ""},
		{"SELECT set_config('application_name', $1, false)", "pass", ""},
		{"SELECT pg_notify('ch', 'x')", "pass", ""},
		{"BEGIN", "pass", ""}, {"SAVEPOINT s1", "pass", ""}, {"RELEASE SAVEPOINT s1", "pass", ""}, {"COMMIT", "pass", ""},
		{"SET search_path TO tenant_1, public", "pass", ""},
		{"SET LOCAL statement_timeout = '5s'", "pass", ""},
		{"SET TIME ZONE 'UTC'", "pass", ""},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "pass", ""},
		{"SET app.tenant_id = '42'", "pass", ""},
		{"SET standard_conforming_strings = on", "pass", ""},
		{"RESET ALL", "pass", ""}, {"DISCARD ALL", "pass", ""}, {"DEALLOCATE ALL", "pass", ""},
		{"SHOW search_path", "pass", ""}, {"LISTEN jobs", "pass", ""}, {"NOTIFY jobs, 'x'", "pass", ""}, {"UNLISTEN *", "pass", ""},
		{"EXPLAIN UPDATE inventory SET quantity = 0", "pass", ""},
		{"EXPLAIN ANALYZE UPDATE inventory SET quantity = 0", "fence", ""},
		{"LOCK TABLE staging IN EXCLUSIVE MODE", "pass", ""},
		{"DECLARE c CURSOR FOR SELECT * FROM inventory", "pass", ""},
		{"COPY (SELECT * FROM inventory) TO STDOUT", "pass", ""},
		{"SELECT app.touch_report(1)", "pass", ""},
		// Settings that change how text is read, names resolve or triggers fire.
		{"SET client_encoding = 'SJIS'", "client_encoding", ""},
		{"SET NAMES 'GBK'", "client_encoding", ""},
		{"SET standard_conforming_strings = off", "standard_conforming_strings", ""},
		{"SET backslash_quote = on", "backslash_quote", ""},
		{"SET session_replication_role = replica", "session_replication_role", ""},
		{"SET ROLE admin", "role", ""},
		{"SET sqlfence.fenced = off", "sqlfence.fenced", ""},
		{"SELECT set_config('client_encoding', 'BIG5', false)", "client_encoding", ""},
		{"SELECT set_config($1, 'off', false)", "not a literal", ""},
		{"SELECT set_config('standard_conforming_strings', 'on', false)", "pass", ""},
		{"SELECT set_config('client_encoding', 'UTF8', false)", "pass", ""},
		{"SELECT set_config('standard_conforming_strings', $1, false)", "standard_conforming_strings", ""},
		{"UPDATE pg_settings SET setting = 'off' WHERE name = 'standard_conforming_strings'", "pg_settings", ""},
		// synchronous_commit: off and local acknowledge a commit before it is safe (SF417).
		{"SET synchronous_commit = off", "synchronous_commit to off", ""},
		{"SET LOCAL synchronous_commit TO 'LOCAL'", "synchronous_commit to LOCAL", ""},
		{"SELECT set_config('synchronous_commit', 'off', false)", "failover", ""},
		{"SET synchronous_commit = remote_apply", "pass", ""},
		{"RESET synchronous_commit", "pass", ""},
		{"UPDATE pg_catalog.pg_settings SET setting = 'SJIS' WHERE name = 'client_encoding'", "pg_settings", ""},
		// SQL-level prepared statements.
		{"PREPARE p AS SELECT 1", "PREPARE", ""},
		{"EXECUTE p", "EXECUTE", ""},
		{"EXECUTE lrupsc_1_0(1, 3)", "EXECUTE", ""},
		{"EXPLAIN ANALYZE EXECUTE p", "EXECUTE", ""},
		// Functions.
		{"SELECT my_report()", "safe_functions", ""},
		{"SELECT billing.recalc(1)", "lists as writing", ""},
		{"CALL app.rebuild()", "safe_functions", ""},
		{"SELECT query_to_xml('UPDATE inventory SET quantity = 0 RETURNING 1', true, false, '')", "query_to_xml", ""},
		{"SELECT * FROM ts_stat('DELETE FROM inventory RETURNING 1')", "ts_stat", ""},
		{"SELECT pg_reload_conf()", "volatile built-in", ""},
		{"SELECT app.touch_report(1), my_report()", "my_report", ""},
		{"SELECT public.touch_report(1)", "safe_functions", ""},
		// DO blocks.
		{"DO $$ BEGIN PERFORM pg_notify('a', 'b'); END $$", "pass", ""},
		{"DO $$ BEGIN UPDATE staging SET q = 1; END $$", "pass", ""},
		{"DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$", "protected", ""},
		{"DO $$ BEGIN EXECUTE 'UPDATE inv' || 'entory SET quantity = 0'; END $$", "dynamic SQL", ""},
		{"DO $$ BEGIN PERFORM set_config('standard_conforming_strings', 'off', false); END $$", "standard_conforming_strings", ""},
		{"DO $$ DECLARE v int; BEGIN v := my_writer(); END $$", "my_writer", ""},
		{"DO LANGUAGE plpython3u $$ plpy.execute('x') $$", "plpython3u", ""},
		// DDL: refused by default; with ddl: allow, refused where it moves the fence's ground.
		{"CREATE TABLE things (id int PRIMARY KEY)", "ddl: deny", "pass"},
		{"ALTER TABLE inventory ADD COLUMN color text", "ddl: deny", "pass"},
		{"CREATE INDEX ON inventory (quantity)", "ddl: deny", "pass"},
		{`ALTER TABLE "orders" ADD CONSTRAINT "fk_users" FOREIGN KEY ("user_id") REFERENCES "users"("id")`, "ddl: deny", "pass"},
		{"ALTER TABLE inventory RENAME TO inventory_old", "ddl: deny", "renaming a protected table"},
		{"ALTER TABLE staging RENAME TO inventory", "ddl: deny", "protected table's name"},
		{"ALTER TABLE inventory RENAME COLUMN writer_epoch TO e", "ddl: deny", "epoch column"},
		{"ALTER SCHEMA public RENAME TO old", "ddl: deny", "schema"},
		{"ALTER TABLE inventory SET SCHEMA archive", "ddl: deny", "another schema"},
		{"ALTER TABLE staging INHERIT inventory", "ddl: deny", "inheritance"},
		{"ALTER TABLE inventory ATTACH PARTITION inv_2025 FOR VALUES IN ('a')", "ddl: deny", "partition"},
		{"ALTER TABLE parent ATTACH PARTITION inventory FOR VALUES IN ('a')", "ddl: deny", "partition"},
		{"CREATE TABLE inv_child () INHERITS (inventory)", "ddl: deny", "inherits"},
		{"ALTER TABLE inventory ALTER COLUMN writer_epoch DROP NOT NULL", "ddl: deny", "epoch column"},
		{"ALTER TABLE inventory ALTER COLUMN quantity TYPE bigint USING quantity * 2", "ddl: deny", "type"},
		{"ALTER TABLE inventory DISABLE TRIGGER ALL", "ddl: deny", "triggers"},
		{"ALTER TABLE inventory ADD CONSTRAINT fk FOREIGN KEY (sku) REFERENCES skus (sku) ON DELETE CASCADE", "ddl: deny", "foreign key"},
		{"ALTER TABLE inventory ADD CONSTRAINT fk FOREIGN KEY (sku) REFERENCES skus (sku) ON UPDATE SET NULL", "ddl: deny", "foreign key"},
		{"DROP TABLE inventory", "ddl: deny", "dropping a protected table"},
		{"DROP TRIGGER sqlfence_guard ON inventory", "ddl: deny", "guard"},
		{"CREATE VIEW inv AS SELECT * FROM inventory", "ddl: deny", "view"},
		{"CREATE RULE r AS ON INSERT TO staging DO ALSO DELETE FROM inventory", "ddl: deny", "rule"},
		{"CREATE TRIGGER t BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION f()", "ddl: deny", "trigger on a protected table"},
		{"CREATE TRIGGER t AFTER INSERT ON staging FOR EACH ROW EXECUTE FUNCTION f()", "ddl: deny", "safe_functions"},
		{"CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = f)", "ddl: deny", "CREATE OPERATOR"},
		{"CREATE CAST (text AS bigint) WITH FUNCTION f(text)", "ddl: deny", "CREATE CAST"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 $$", "ddl: deny", "protected"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE sql AS 'DELETE FROM billing.invoices'", "ddl: deny", "protected"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; END $$", "ddl: deny", "protected"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'x'; END $$", "ddl: deny", "dynamic SQL"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE inventory SET quantity = 0; END", "ddl: deny", "protected"},
		{"CREATE FUNCTION w() RETURNS int LANGUAGE sql AS $$ SELECT count(*)::int FROM staging $$", "ddl: deny", "pass"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE sql SET standard_conforming_strings = off AS $$ SELECT 1 $$", "ddl: deny", "standard_conforming_strings"},
		{"CREATE FUNCTION w() RETURNS void LANGUAGE c AS 'lib', 'sym'", "ddl: deny", "language c"},
		{"CREATE EXTENSION dblink", "ddl: deny", "ddl: allow"},
		// Extensions PostgreSQL ships that sqlfence reviewed; any other, IF NOT EXISTS too.
		{"CREATE EXTENSION IF NOT EXISTS pgcrypto", "ddl: deny", "pass"},
		{`CREATE EXTENSION IF NOT EXISTS "uuid-ossp" WITH SCHEMA public CASCADE`, "ddl: deny", "pass"},
		{"CREATE EXTENSION citext VERSION '1.6'", "ddl: deny", "pass"},
		{"CREATE EXTENSION IF NOT EXISTS dblink", "ddl: deny", "IF NOT EXISTS too"},
		{"CREATE EXTENSION IF NOT EXISTS postgres_fdw", "ddl: deny", "install script"},
		{"CREATE EXTENSION IF NOT EXISTS tablefunc", "ddl: deny", "install script"},
		{"CREATE EXTENSION IF NOT EXISTS refint", "ddl: deny", "install script"},
		{`CREATE EXTENSION IF NOT EXISTS "PGCRYPTO"`, "ddl: deny", "install script"},
		{"CREATE EXTENSION IF NOT EXISTS no_such_extension", "ddl: deny", "install script"},
		{"ALTER EXTENSION pgcrypto UPDATE", "ddl: deny", "ddl: allow"},
		// Views PostgreSQL cannot write through; a trigger or rule that makes one writable.
		{`CREATE VIEW "users_pets" AS SELECT users.name, pets.name AS pet FROM "inventory" users JOIN staging pets ON pets.sku = users.sku`, "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT i.sku FROM inventory i, staging s WHERE s.sku = i.sku", "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT DISTINCT sku FROM inventory", "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT sku, count(*) FROM inventory GROUP BY sku", "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT sku FROM inventory UNION ALL SELECT sku FROM staging", "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT * FROM inventory LIMIT ALL", "ddl: deny", "pass"},
		{"CREATE VIEW v AS WITH x AS (SELECT * FROM inventory) SELECT * FROM x", "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT * FROM (SELECT * FROM inventory) x", "ddl: deny", "pass"},
		{"CREATE VIEW v AS SELECT * FROM inventory WHERE quantity > 0", "ddl: deny", "can write through"},
		{"CREATE VIEW v AS SELECT sku, (SELECT count(*) FROM staging) AS n FROM inventory", "ddl: deny", "can write through"},
		{"CREATE VIEW v AS SELECT * FROM staging WHERE sku IN (SELECT sku FROM inventory)", "ddl: deny", "can write through"},
		{"CREATE VIEW v AS SELECT * FROM ONLY inventory WITH CHECK OPTION", "ddl: deny", "can write through"},
		{"CREATE OR REPLACE VIEW v AS SELECT * FROM inventory", "ddl: deny", "can write through"},
		{"CREATE VIEW v AS SELECT DISTINCT sku FROM inventory WHERE billing.recalc() > 0", "ddl: deny", "lists as writing"},
		{"CREATE RULE r AS ON UPDATE TO users_pets DO INSTEAD UPDATE inventory SET quantity = 0", "ddl: deny", "rule"},
		{"CREATE RULE r AS ON INSERT TO users_pets DO INSTEAD SELECT billing.recalc()", "ddl: deny", "lists as writing"},
		{"CREATE TRIGGER t INSTEAD OF UPDATE ON users_pets FOR EACH ROW EXECUTE FUNCTION f()", "ddl: deny", "safe_functions"},
		// The functional notation for a column needs the catalog to tell it from a call.
		{"SELECT quantity(i) FROM inventory i", "safe_functions", ""},
		{"ALTER ROLE app SET client_encoding = 'SJIS'", "ddl: deny", "defaults"},
		{"TRUNCATE staging CASCADE", "CASCADE", ""},
		{"SELECT * INTO staging_copy FROM staging", "ddl: deny", "pass"},
		{"CREATE TABLE t2 AS SELECT * FROM staging", "ddl: deny", "pass"},
		{"DO $$ DECLARE r record; n int := 0; BEGIN FOR r IN SELECT * FROM staging LOOP n := n + 1; END LOOP; RAISE NOTICE '%', n; END $$", "pass", ""},
		{"TRUNCATE staging", "pass", ""},
		{"COPY staging FROM '/etc/passwd'", "server file", ""},
		{"COPY staging FROM PROGRAM 'id'", "server file", ""},
	}
	for _, tc := range cases {
		for _, mode := range []struct {
			name string
			p    *sqlfence.Policy
			want string
		}{{"deny", deny, tc.deny}, {"allow", allow, tc.allow}} {
			want := mode.want
			if want == "" {
				want = tc.deny
			}
			plan := mode.p.Plan(tc.sql)
			switch want {
			case "pass":
				if plan.Err != nil || plan.Fenced != "" {
					t.Errorf("ddl: %s: %s\n  want it sent unchanged, got fenced=%q err=%v", mode.name, tc.sql, plan.Fenced, plan.Err)
				}
			case "fence":
				if plan.Err != nil || plan.Fenced == "" {
					t.Errorf("ddl: %s: %s\n  want it fenced, got err=%v", mode.name, tc.sql, plan.Err)
				}
			default:
				if !errors.Is(plan.Err, sqlfence.ErrRefused) || !strings.Contains(strings.ToLower(plan.Err.Error()), strings.ToLower(want)) {
					t.Errorf("ddl: %s: %s\n  want a refusal that says %q, got %v", mode.name, tc.sql, want, plan.Err)
				}
				if p := codeProblem(plan.Err); p != "" {
					t.Errorf("ddl: %s: %s: %s", mode.name, tc.sql, p)
				}
			}
		}
	}
}

// TestDecisionsOnOwnedMemory: a program that builds statements in a buffer it reuses
// (unsafe.String) gets each statement judged by its own bytes, never by the decision
// of what the buffer held before.
func TestDecisionsOnOwnedMemory(t *testing.T) {
	db, r := openFull(t)
	ctx := context.Background()
	buf := []byte("SELECT 1 FROM staging WHERE true")
	q := unsafe.String(&buf[0], len(buf))
	for range 3 { // into the cache and the connection's memo
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	copy(buf, "DELETE FROM inventory WHERE true")
	if _, err := db.ExecContext(ctx, q); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("the reused buffer now holds a protected write without an epoch: got %v, want ErrUnfenced", err)
	}
	if n := len(r.statements()); n != 3 {
		t.Fatalf("%d statements reached the driver, want the 3 reads", n)
	}
}

// TestQueryRewriterRefusedEverywhere: a pgx query rewriter replaces the text after
// sqlfence decided on it, so it is refused on any statement.
func TestQueryRewriterRefusedEverywhere(t *testing.T) {
	db, r := openFull(t)
	for _, q := range []string{"SELECT @x", "UPDATE staging SET q = @x"} {
		_, err := db.ExecContext(context.Background(), q, pgx.NamedArgs{"x": 1})
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Fatalf("%s with pgx.NamedArgs: got %v, want ErrRefused", q, err)
		}
	}
	if got := r.statements(); len(got) != 0 {
		t.Fatalf("sent: %v", got)
	}
	var _ *sql.DB = db
}
