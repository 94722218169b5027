-- What ddl: allow now lets through, abused: CREATE EXTENSION of an extension sqlfence
-- did not review (installed or not, IF NOT EXISTS or not) followed by the call that
-- would write through it; a view PostgreSQL cannot write through over a protected
-- table, then made writable by an INSTEAD OF trigger or an INSTEAD rule made through
-- the driver; the functional notation for a column where a function of that name
-- writes; and text sqlfence's parser rejects, which the server is asked to parse
-- without executing it (a multi-statement text whose first statement parses and
-- writes). Format: see the comment at the top of attack_test.go.

--! name: ddl-relaxed-dblink-if-not-exists
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE EXTENSION IF NOT EXISTS dblink
--! query
SELECT dblink_exec('dbname=${db} user=${user}', 'UPDATE inventory SET quantity = 0')

--! name: ddl-relaxed-dblink-installed
--! class: ddl
--! policy: catalog-ddl
--! note: installed by a migration: IF NOT EXISTS is refused all the same, and the call judged
--! setup
CREATE EXTENSION dblink;
--! exec
CREATE EXTENSION IF NOT EXISTS dblink
--! query
SELECT dblink_exec('dbname=${db} user=${user}', 'UPDATE inventory SET quantity = 0')

--! name: ddl-relaxed-dblink-dropped-then-if-not-exists
--! class: ddl
--! policy: catalog-ddl
--! note: sqlfence's snapshot saw it installed; a DROP (here on the same session) first
--! setup
CREATE EXTENSION dblink;
--! exec
DROP EXTENSION dblink
--! exec
CREATE EXTENSION IF NOT EXISTS dblink
--! query
SELECT dblink_exec('dbname=${db} user=${user}', 'DELETE FROM inventory')

--! name: ddl-relaxed-tablefunc
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE EXTENSION IF NOT EXISTS tablefunc
--! query
SELECT * FROM crosstab('DELETE FROM inventory RETURNING sku, sku, quantity') AS t(a text, b int)

--! name: ddl-relaxed-refint
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE EXTENSION refint
--! exec
CREATE TRIGGER cascade_del BEFORE DELETE ON staging FOR EACH ROW EXECUTE FUNCTION check_foreign_key(1, 'cascade', 'sku', 'inventory', 'sku')
--! exec
DELETE FROM staging

--! name: ddl-relaxed-unknown-extension
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE EXTENSION IF NOT EXISTS no_such_extension
--! exec
CREATE EXTENSION "PGCRYPTO"
--! exec
UPDATE inventory SET quantity = 0

--! name: ddl-relaxed-reviewed-then-lookalike
--! class: ddl
--! policy: catalog-ddl
--! note: a reviewed extension created through the driver; a user function named like its member judged by its body
--! exec
CREATE EXTENSION IF NOT EXISTS "uuid-ossp"
--! exec
CREATE FUNCTION uuid_generate_v4(x int) RETURNS uuid LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NULL; END $$
--! exec
CREATE TABLE tokens (id uuid DEFAULT uuid_generate_v4(), n int)
--! exec
INSERT INTO tokens (n) VALUES (1)

--! name: ddl-relaxed-join-view-instead-trigger
--! class: ddl
--! policy: catalog-ddl
--! setup
CREATE FUNCTION zero_inventory() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NULL; END $$;
--! exec
CREATE VIEW inv_notes AS SELECT i.sku, i.quantity, s.n FROM inventory i JOIN staging s ON s.sku = i.sku
--! exec
CREATE TRIGGER w INSTEAD OF UPDATE ON inv_notes FOR EACH ROW EXECUTE FUNCTION zero_inventory()
--! exec
UPDATE inv_notes SET quantity = 0
--! exec
DELETE FROM inv_notes

--! name: ddl-relaxed-join-view-instead-trigger-own-function
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE VIEW inv_notes AS SELECT i.sku, i.quantity, s.n FROM inventory i JOIN staging s ON s.sku = i.sku
--! exec
CREATE FUNCTION pass_through() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = NEW.quantity WHERE sku = OLD.sku; RETURN NEW; END $$
--! exec
CREATE TRIGGER w INSTEAD OF UPDATE ON inv_notes FOR EACH ROW EXECUTE FUNCTION pass_through()
--! exec
UPDATE inv_notes SET quantity = 0

--! name: ddl-relaxed-join-view-rule
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE VIEW inv_notes AS SELECT i.sku, i.quantity, s.n FROM inventory i JOIN staging s ON s.sku = i.sku
--! exec
CREATE RULE r AS ON UPDATE TO inv_notes DO INSTEAD UPDATE inventory SET quantity = NEW.quantity WHERE sku = OLD.sku
--! exec
CREATE RULE r2 AS ON DELETE TO inv_notes DO INSTEAD DELETE FROM public.inventory WHERE sku = OLD.sku
--! exec
UPDATE inv_notes SET quantity = 0
--! exec
DELETE FROM inv_notes

--! name: ddl-relaxed-distinct-view-rule-via-function
--! class: ddl
--! policy: catalog-ddl
--! setup
CREATE FUNCTION zero_all() RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 RETURNING 1 $$;
--! exec
CREATE VIEW skus AS SELECT DISTINCT sku FROM inventory
--! exec
CREATE RULE r AS ON INSERT TO skus DO INSTEAD SELECT zero_all()
--! exec
INSERT INTO skus VALUES ('a')

--! name: ddl-relaxed-view-replaced-writable
--! class: ddl
--! policy: catalog-ddl
--! exec
CREATE VIEW inv_v AS SELECT DISTINCT sku, quantity, writer_epoch FROM inventory
--! exec
CREATE OR REPLACE VIEW inv_v AS SELECT sku, quantity, writer_epoch FROM inventory
--! exec
UPDATE inv_v SET quantity = 0

--! name: ddl-relaxed-view-no-catalog
--! class: ddl
--! policy: ddl
--! exec
CREATE VIEW inv_notes AS SELECT i.sku, i.quantity, s.n FROM inventory i JOIN staging s ON s.sku = i.sku
--! exec
CREATE RULE r AS ON UPDATE TO inv_notes DO INSTEAD UPDATE inventory SET quantity = 0
--! exec
CREATE TRIGGER w INSTEAD OF UPDATE ON inv_notes FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()
--! exec
UPDATE inv_notes SET quantity = 0

--! name: ddl-relaxed-column-notation-writer
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION gone(s staging) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 RETURNING 1 $$;
CREATE SCHEMA tools;
CREATE FUNCTION tools.q(s staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory; RETURN 1; END $$;
--! query
SELECT gone(s) FROM staging s
--! query
SELECT q(s) FROM staging s
--! exec
SET search_path = tools, public
--! query
SELECT q(s) FROM staging s

--! name: ddl-relaxed-column-notation-created-through-driver
--! class: server-reading
--! policy: catalog-ddl
--! exec
CREATE FUNCTION sku_of(s staging) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$
--! query
SELECT q(s) FROM staging s
--! exec
CREATE FUNCTION q(s staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$
--! query
SELECT q(s) FROM staging s

--! name: ddl-relaxed-parse-multi-statement
--! class: text-reading
--! note: the first statement parses and writes; the text does not parse: the server parses it whole, nothing runs
--! exec
UPDATE inventory SET quantity = 0; SELEC 1
--! exec
DELETE FROM inventory; UPDATE inventory SET
--! query
UPDATE inventory SET quantity = 0 RETURNING sku; SELECT (
--! prepare run
DELETE FROM inventory; DELETE FROM inventory WHERE

--! name: ddl-relaxed-parse-simple-protocol
--! class: text-reading
--! dsn: default_query_exec_mode=simple_protocol
--! exec
UPDATE inventory SET quantity = 0; SELEC 1
--! exec simple
DELETE FROM inventory; DELETE FROM
--! exec args=[1]
UPDATE inventory SET quantity = $1; SELECT (
