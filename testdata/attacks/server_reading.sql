-- Class 11: the server runs something other than what the text seems to say. A name in
-- column position is a call (x.f and (x).f are f(x) when x has no column f); a
-- built-in's name reaches a user function that overloads or shadows it; a STABLE or
-- IMMUTABLE function runs dynamic SQL whose callee writes; a subscript of a PL/pgSQL
-- assignment target calls a function; a view shows another column under the epoch
-- column's name. The writers are created by a migration (setup). Without resolve:
-- catalog sqlfence cannot tell a user function's name from a column's (docs/policy.md,
-- "What sqlfence cannot see"): those cases are marked known_hole.
--
-- Format: see the comment at the top of attack_test.go.

--! name: attribute-notation-relation
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! query
SELECT s.zap FROM staging s

--! name: attribute-notation-parenthesized
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! query
SELECT (s).zap FROM staging s
--! query
SELECT (ROW(s.*)::staging).zap FROM staging s

--! name: attribute-notation-qualified-table
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! query
SELECT public.staging.zap FROM public.staging

--! name: attribute-notation-composite-column
--! class: server-reading
--! policy: catalog
--! setup
CREATE TYPE pair AS (a int, b int);
CREATE TABLE pairs (p pair);
INSERT INTO pairs VALUES (ROW(1, 2));
CREATE FUNCTION boom(pair) RETURNS int LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory; RETURN 1; END $$;
--! query
SELECT (t.p).boom FROM pairs t
--! query
SELECT t.p.boom FROM pairs t

--! name: attribute-notation-unprotected-write
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! exec
UPDATE staging s SET q = s.zap
--! exec
INSERT INTO audit SELECT s.zap::text FROM staging s

--! name: attribute-notation-fenced-write
--! class: server-reading
--! policy: catalog
--! note: the fenced row a is stamped, the function changes b unfenced
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1 WHERE sku = 'b'; RETURN 1; END $$;
--! exec
UPDATE inventory SET quantity = (SELECT s.zap FROM staging s LIMIT 1) WHERE sku = 'a'

--! name: attribute-notation-copy-cursor-explain
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! exec
COPY (SELECT s.zap FROM staging s) TO STDOUT
--! exec
DECLARE c CURSOR WITH HOLD FOR SELECT s.zap FROM staging s
--! query
EXPLAIN (ANALYZE) SELECT (s).zap FROM staging s

--! name: attribute-notation-default-policy
--! policy: none
--! class: server-reading
--! known_hole: without resolve: catalog a user function called as x.f reads like the column x.f
--! setup
CREATE FUNCTION zap(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! query
SELECT s.zap FROM staging s

--! name: attribute-notation-listed-function
--! class: server-reading
--! note: the policy lists billing.recalc: refused under either policy
--! setup
CREATE FUNCTION billing.recalc(staging) RETURNS int LANGUAGE sql AS $$ UPDATE billing.invoices SET total = 0 RETURNING 1 $$;
ALTER ROLE ${user} IN DATABASE ${db} SET search_path = public, billing;
--! reconnect
--! query
SELECT s.recalc FROM staging s

--! name: builtin-name-overload
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION public.lower(int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN $1; END $$;
--! query
SELECT lower(1)

--! name: builtin-name-overload-default-policy
--! policy: none
--! class: server-reading
--! known_hole: without resolve: catalog a built-in's name is taken for the built-in
--! setup
CREATE FUNCTION public.lower(int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN $1; END $$;
--! query
SELECT lower(1)

--! name: builtin-name-search-path-shadow
--! class: server-reading
--! policy: catalog
--! note: pg_catalog is searched first unless search_path names it; here it comes after tools
--! setup
CREATE SCHEMA tools;
CREATE FUNCTION tools.upper(text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory; RETURN $1; END $$;
ALTER ROLE ${user} IN DATABASE ${db} SET search_path = tools, pg_catalog, public;
--! reconnect
--! query
SELECT upper('x')

--! name: builtin-name-attribute-notation
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION public.length(staging) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
--! query
SELECT s.length FROM staging s

--! name: stable-execute
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE FUNCTION looks_safe() RETURNS int STABLE LANGUAGE plpgsql AS $$ DECLARE r int; BEGIN EXECUTE 'SELECT wri' || 'ter()' INTO r; RETURN r; END $$;
--! query
SELECT looks_safe()

--! name: immutable-return-query-execute
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE FUNCTION looks_pure() RETURNS SETOF int IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE 'SELECT writer()'; END $$;
--! query
SELECT * FROM looks_pure()

--! name: stable-query-to-xml
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE FUNCTION looks_safe() RETURNS xml STABLE LANGUAGE sql AS $$ SELECT query_to_xml('SELECT writer()', false, false, '') $$;
--! query
SELECT looks_safe()

--! name: stable-trigger-function
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE FUNCTION on_staging() RETURNS trigger STABLE LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'SELECT writer()'; RETURN NEW; END $$;
CREATE TRIGGER on_staging BEFORE UPDATE ON staging FOR EACH ROW EXECUTE FUNCTION on_staging();
--! exec
UPDATE staging SET q = 1

--! name: stable-function-a-rule-calls
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE FUNCTION looks_safe() RETURNS int STABLE LANGUAGE plpgsql AS $$ DECLARE r int; BEGIN EXECUTE 'SELECT writer()' INTO r; RETURN r; END $$;
CREATE RULE also_check AS ON INSERT TO audit DO ALSO SELECT looks_safe();
--! exec
INSERT INTO audit VALUES ('x')

--! name: plpgsql-assignment-subscripts-do
--! class: server-reading
--! note: under the default policy the call of an unknown function is refused; the subscript is where it hid
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE TYPE holder AS (f int[]);
--! exec
DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer()] := 1; END $$
--! exec
DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer():2] := '{3}'; END $$
--! exec
DO $$ DECLARE a int[] := '{{1,2},{3,4}}'; BEGIN a[1][writer()] := 5; END $$
--! exec
DO $$ DECLARE r holder := ROW('{1}'); BEGIN r.f[writer()] := 1; END $$
--! exec
DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[(writer() = 1)::int] := 1; END $$

--! name: plpgsql-assignment-subscripts-catalog
--! class: server-reading
--! policy: catalog
--! setup
CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
CREATE FUNCTION looks_harmless() RETURNS int LANGUAGE plpgsql AS $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer()] := 1; RETURN 1; END $$;
CREATE FUNCTION on_staging() RETURNS trigger LANGUAGE plpgsql AS $$ DECLARE a int[] := '{1,2}'; BEGIN a[1:writer()] := '{1}'; RETURN NEW; END $$;
CREATE TRIGGER on_staging BEFORE UPDATE ON staging FOR EACH ROW EXECUTE FUNCTION on_staging();
--! query
SELECT looks_harmless()
--! exec
DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer()] := 1; END $$
--! exec
UPDATE staging SET q = 1

--! name: view-epoch-is-another-column
--! class: server-reading
--! policy: catalog
--! setup
ALTER TABLE inventory ADD COLUMN shadow bigint NOT NULL DEFAULT 0;
CREATE VIEW stock AS SELECT sku, quantity, shadow AS writer_epoch FROM inventory;
--! exec
UPDATE stock SET quantity = 0 WHERE sku = 'a'
--! exec
DELETE FROM stock WHERE sku = 'b'

--! name: view-epoch-is-computed
--! class: server-reading
--! policy: catalog
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch * 0 AS writer_epoch FROM inventory;
--! exec
DELETE FROM stock WHERE sku = 'b'

--! name: view-over-view-epoch-swapped-below
--! class: server-reading
--! policy: catalog
--! setup
ALTER TABLE inventory ADD COLUMN shadow bigint NOT NULL DEFAULT 0;
CREATE VIEW stock AS SELECT sku, quantity, shadow AS writer_epoch FROM inventory;
CREATE VIEW stock_all AS SELECT * FROM stock;
--! exec
UPDATE stock_all SET quantity = 0 WHERE sku = 'a'

--! name: view-epoch-control
--! class: server-reading
--! policy: catalog
--! note: control: the view's writer_epoch is the table's own, and writes through it are fenced
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
CREATE VIEW stock_renamed (code, amount, writer_epoch) AS SELECT sku, quantity, writer_epoch FROM inventory;
--! exec
UPDATE stock SET quantity = 0 WHERE sku = 'a'
--! exec
UPDATE stock_renamed SET amount = 1 WHERE code = 'b'

--! name: operator-of-migration-writer
--! class: server-reading
--! policy: catalog
--! note: an operator is a call of its function
--! setup
CREATE FUNCTION wipe_pair(a int, b int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN true; END $$;
CREATE OPERATOR public.<<>> (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe_pair);
--! query
SELECT sku FROM staging WHERE q <<>> 1
--! query
SELECT sku FROM staging ORDER BY q USING <<>>

--! name: operator-shadowing-equals
--! class: server-reading
--! policy: catalog
--! note: with public before pg_catalog in search_path, public.= (int, int) is the = of every comparison
--! setup
CREATE FUNCTION wipe_pair(a int, b int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN true; END $$;
CREATE OPERATOR public.= (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe_pair);
ALTER ROLE ${user} IN DATABASE ${db} SET search_path = public, pg_catalog;
--! reconnect
--! query
SELECT sku FROM staging WHERE q = 1
--! query
SELECT sku FROM staging WHERE q IN (1, 2)
--! query
SELECT CASE q WHEN 1 THEN 'one' END FROM staging
--! query
SELECT 1 FROM staging a JOIN staging b USING (q)

--! name: operator-default-policy
--! policy: none
--! class: server-reading
--! known_hole: without resolve: catalog the function behind a user operator is not seen
--! setup
CREATE FUNCTION wipe_pair(a int, b int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN true; END $$;
CREATE OPERATOR public.<<>> (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe_pair);
--! query
SELECT sku FROM staging WHERE q <<>> 1
