-- The guard must not be forgeable from inside a statement the driver lets through.
-- The guard (sqlfence guard --apply, installed by --! guard) lets a write to a
-- protected table through when the statement starts with the driver's marker, runs
-- at trigger depth 1 outside any routine, and the session carries sqlfence.fenced; or
-- under an operator override: sqlfence.override set, with sqlfence.override_xact equal
-- to the transaction's id. Each case sets one of them from inside an allowed statement,
-- then makes a write the driver cannot see (a trigger of an unprotected table, which
-- under the default policy the driver does not read) that only the guard stops.
-- Format: see the comment at the top of attack_test.go.

--! name: guard-control-trigger-write
--! class: guard-forgery
--! note: control: the trigger's write to inventory is the guard's to stop, and it does
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
INSERT INTO t VALUES (1)

--! name: guard-override-set-config-select
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! query
SELECT set_config('sqlfence.override', 'restore inventory after INC-1', true), set_config('sqlfence.override_xact', pg_current_xact_id()::text, true)
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-set-config-same-statement
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
INSERT INTO t SELECT 1 WHERE set_config('sqlfence.override', 'restore inventory after INC-1', true) <> '' AND set_config('sqlfence.override_xact', pg_current_xact_id()::text, true) <> ''

--! name: guard-override-set-config-cte
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
WITH o AS (SELECT set_config('sqlfence.override', 'restore inventory after INC-1', true) AS a, set_config('sqlfence.override_xact', pg_current_xact_id()::text, true) AS b)
INSERT INTO t SELECT 1 FROM o

--! name: guard-override-set-config-cast-and-case
--! class: guard-forgery
--! note: the name as a cast literal, in another case, and passed by name
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! query
SELECT pg_catalog.set_config('SQLFENCE.Override'::text, 'restore inventory after INC-1', true)
--! query
SELECT set_config(setting_name => 'sqlfence.override_xact', new_value => pg_current_xact_id()::text, is_local => true)
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-set-config-computed-name
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! query
SELECT set_config(n, v, true) FROM (VALUES ('sqlfence.' || 'override', 'restore inventory after INC-1'), ('sqlfence.override_xact', pg_current_xact_id()::text)) AS s(n, v)
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-set-local
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! query capture=xid
SELECT pg_current_xact_id()::text
--! exec
SET LOCAL sqlfence.override = 'restore inventory after INC-1'
--! exec
SET LOCAL "sqlfence"."override_xact" TO '${xid}'
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-do-block
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! exec
DO $$ BEGIN PERFORM set_config('sqlfence.override', 'restore inventory after INC-1', true); PERFORM set_config('sqlfence.override_xact', pg_current_xact_id()::text, true); END $$
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-function-call
--! class: guard-forgery
--! note: the operator's override function itself, called through the driver
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! query
SELECT sqlfence.override('restore inventory after INC-1')
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-function-call-unqualified
--! class: guard-forgery
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
BEGIN
--! exec
SET LOCAL search_path = sqlfence, public
--! query
SELECT override('restore inventory after INC-1')
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-function-call-catalog
--! class: guard-forgery
--! policy: catalog
--! note: under resolve: catalog the override's body is read: it sets sqlfence.override
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
CREATE FUNCTION public.wrap() RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN sqlfence.override('restore inventory after INC-1'); END $$;
--! guard
--! exec
BEGIN
--! query
SELECT public.wrap()
--! query
SELECT sqlfence.override('restore inventory after INC-1')
--! exec
INSERT INTO t VALUES (1)
--! exec
COMMIT

--! name: guard-override-function-set-clause
--! class: guard-forgery
--! policy: catalog
--! note: a function's SET clause holds while it runs; one that writes through the trigger
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
CREATE FUNCTION public.noop() RETURNS int LANGUAGE sql SET sqlfence.override = 'restore inventory after INC-1' AS 'SELECT 1';
--! guard
--! exec
BEGIN
--! query
SELECT public.noop()
--! exec
COMMIT

--! name: guard-fenced-setting-off-then-marker
--! class: guard-forgery
--! note: the marker, written by the application in a comment or a literal, is refused
--! setup
CREATE TABLE t (v int);
CREATE FUNCTION t_hook() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
CREATE TRIGGER t_hook AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_hook();
--! guard
--! exec
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = 0
--! exec
SELECT set_config('sqlfence.fenced', 'on', false)
--! exec
RESET sqlfence.fenced
