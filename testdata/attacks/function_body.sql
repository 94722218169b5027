-- Class 2: functions and procedures whose bodies are string literals ($$…$$, '…'),
-- created through the driver and then called: in a SELECT list, by CALL, in a WHERE, in
-- a column DEFAULT, in a CHECK, in a generated column, an index, an aggregate, a view.
-- The body is a string to the SQL parser: the write inside it runs later, inside the
-- database, with no epoch.
--
-- Format: see the comment at the top of attack_test.go.

--! name: sql-dollar-body-select
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 $$
--! exec
SELECT f()

--! name: sql-quoted-body-select
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'DELETE FROM inventory WHERE sku = ''a'''
--! exec
SELECT f()

--! name: plpgsql-body
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; END $$
--! exec
SELECT f()

--! name: plpgsql-dynamic-sql-split-name
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DELETE FROM ' || 'invent' || 'ory'; END $$
--! exec
SELECT f()

--! name: procedure-call
--! class: function-body
--! exec
CREATE PROCEDURE p() LANGUAGE sql AS $$ DELETE FROM inventory WHERE sku = 'a' $$
--! exec
CALL p()

--! name: procedure-plpgsql-commit
--! class: function-body
--! exec
CREATE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; COMMIT; END $$
--! exec
CALL p()

--! name: function-in-where
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS bool LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 RETURNING true $$
--! query
SELECT sku FROM staging WHERE f()

--! name: function-in-order-by
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory WHERE sku = 'b'; RETURN 1; END $$
--! query
SELECT sku FROM staging ORDER BY f()

--! name: function-in-default
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 'x'; END $$
--! exec
ALTER TABLE staging ALTER COLUMN n SET DEFAULT f()
--! exec
INSERT INTO staging (sku) VALUES ('x')

--! name: function-in-check
--! class: function-body
--! exec
CREATE FUNCTION f(s text) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN true; END $$
--! exec
ALTER TABLE audit ADD CONSTRAINT audit_check CHECK (f(sku))
--! exec
INSERT INTO audit VALUES ('x')

--! name: function-in-view
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0 RETURNING 1 $$
--! exec
CREATE VIEW v AS SELECT f() AS x
--! query
SELECT * FROM v

--! name: aggregate-state-function
--! class: function-body
--! exec
CREATE FUNCTION f(acc int, v int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN acc + v; END $$
--! exec
CREATE AGGREGATE total(int) (SFUNC = f, STYPE = int, INITCOND = '0')
--! query
SELECT total(q) FROM staging

--! name: create-or-replace-harmless
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$
--! exec
SELECT f()
--! exec
CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql AS $$ DELETE FROM inventory; SELECT 1 $$
--! exec
SELECT f()

--! name: stable-function-calls-volatile
--! class: function-body
--! note: PostgreSQL's docs: a STABLE function's read-only check "is not a completely bulletproof test" — it may call a volatile function that writes
--! exec
CREATE FUNCTION w() RETURNS void LANGUAGE sql VOLATILE AS $$ UPDATE inventory SET quantity = 0 $$
--! exec
CREATE FUNCTION s() RETURNS int LANGUAGE plpgsql STABLE AS $$ BEGIN PERFORM w(); RETURN 1; END $$
--! exec
SELECT s()

--! name: immutable-generated-column
--! class: function-body
--! exec
CREATE FUNCTION w(i int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN i; END $$
--! exec
CREATE FUNCTION g(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN w(i); END $$
--! exec
ALTER TABLE staging ADD COLUMN g int GENERATED ALWAYS AS (g(q)) STORED

--! name: immutable-index-expression
--! class: function-body
--! exec
CREATE FUNCTION w(i int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$ BEGIN DELETE FROM inventory WHERE sku = 'a'; RETURN i; END $$
--! exec
CREATE FUNCTION g(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN w(i); END $$
--! exec
CREATE INDEX staging_g ON staging (g(q))

--! name: stable-function-writes-directly
--! class: function-body
--! note: a STABLE function cannot write itself: PostgreSQL refuses the UPDATE at run time
--! exec
CREATE FUNCTION s() RETURNS int LANGUAGE plpgsql STABLE AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$
--! exec
SELECT s()

--! name: standard-sql-body
--! class: function-body
--! note: a BEGIN ATOMIC body is parsed with the statement
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE inventory SET quantity = 0; END
--! exec
SELECT f()

--! name: body-unicode-escaped-name
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ UPDATE U&"\0069nventory" SET quantity = 0 $$
--! exec
SELECT f()

--! name: function-called-from-do-block
--! class: function-body
--! exec
CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ UPDATE reports SET body = 'gone' $$
--! exec
DO $$ BEGIN PERFORM f(); END $$

--! name: function-through-lateral
--! class: function-body
--! exec
CREATE FUNCTION f(s text) RETURNS bool LANGUAGE sql AS $$ DELETE FROM inventory WHERE sku = s RETURNING true $$
--! query
SELECT st.sku FROM staging st, LATERAL (SELECT f(st.sku)) x
