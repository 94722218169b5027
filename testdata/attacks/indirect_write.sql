-- Class 3: a function that writes protected tables, reached under another name. The
-- writer is created by a migration (setup, outside the driver) or through the driver;
-- the statement that sets it off names an operator, an unprotected table (rule,
-- trigger), a view (INSTEAD OF trigger), a wrapper function, a domain, a cursor, or
-- nothing at all (an event trigger). The policy lists billing.recalc as writing
-- billing.invoices; everything else is unlisted.
--
-- Format: see the comment at the top of attack_test.go.

--! name: migration-function-select
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_inventory() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0, note = 'wiped' $$;
--! exec
SELECT wipe_inventory()

--! name: migration-function-where
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_bool() RETURNS bool LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory; RETURN true; END $$;
--! query
SELECT sku FROM staging WHERE wipe_bool()

--! name: migration-procedure-call
--! class: indirect-write
--! setup
CREATE PROCEDURE wipe_proc() LANGUAGE sql AS $$ UPDATE billing.invoices SET total = 0 $$;
--! exec
CALL wipe_proc()

--! name: listed-function-select
--! class: indirect-write
--! note: the listed function itself is refused
--! setup
CREATE FUNCTION billing.recalc() RETURNS void LANGUAGE sql AS $$ UPDATE billing.invoices SET total = 0 $$;
--! exec
SELECT billing.recalc()
--! exec
SELECT "billing"."recalc"()
--! exec
SELECT BILLING.RECALC()
--! exec
SET search_path = billing, public
--! exec
SELECT recalc()

--! name: listed-function-wrapper
--! class: indirect-write
--! setup
CREATE FUNCTION billing.recalc() RETURNS void LANGUAGE sql AS $$ UPDATE billing.invoices SET total = 0 $$;
--! exec
CREATE FUNCTION public.recompute() RETURNS void LANGUAGE sql AS $$ SELECT billing.recalc() $$
--! exec
SELECT recompute()

--! name: listed-function-migration-wrapper
--! class: indirect-write
--! setup
CREATE FUNCTION billing.recalc() RETURNS void LANGUAGE sql AS $$ UPDATE billing.invoices SET total = 0 $$;
CREATE FUNCTION public.nightly() RETURNS void LANGUAGE sql AS $$ SELECT billing.recalc() $$;
--! exec
SELECT nightly()

--! name: listed-function-operator
--! class: indirect-write
--! setup
CREATE FUNCTION billing.recalc(a int, b int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE billing.invoices SET total = 0; RETURN true; END $$;
--! exec
CREATE OPERATOR public.### (LEFTARG = int, RIGHTARG = int, FUNCTION = billing.recalc)
--! exec
SELECT 1 ### 2

--! name: operator-over-migration-writer
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_pair(a int, b int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN true; END $$;
--! exec
CREATE OPERATOR public.<<>> (LEFTARG = int, RIGHTARG = int, FUNCTION = wipe_pair)
--! query
SELECT sku FROM staging WHERE q <<>> 1

--! name: rule-on-unprotected-calls-writer
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_inventory() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0, note = 'wiped' $$;
--! exec
CREATE RULE audit_wipe AS ON INSERT TO audit DO ALSO SELECT wipe_inventory()
--! exec
INSERT INTO audit VALUES ('x')

--! name: rule-on-unprotected-writes-protected
--! class: indirect-write
--! note: a rule whose action names the protected table is refused
--! exec
CREATE RULE audit_wipe AS ON INSERT TO audit DO ALSO UPDATE inventory SET quantity = 0
--! exec
INSERT INTO audit VALUES ('x')

--! name: rule-instead-on-unprotected
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_inventory() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0, note = 'wiped' $$;
--! exec
CREATE RULE staging_wipe AS ON UPDATE TO staging DO INSTEAD SELECT wipe_inventory()
--! exec
UPDATE staging SET q = 0

--! name: rule-from-migration
--! policy: catalog
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_inventory() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0, note = 'wiped' $$;
CREATE RULE audit_wipe AS ON INSERT TO audit DO ALSO SELECT wipe_inventory();
--! exec
INSERT INTO audit VALUES ('x')

--! name: trigger-on-unprotected-migration-function
--! class: indirect-write
--! setup
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NULL; END $$;
--! exec
CREATE TRIGGER audit_wipe AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION trg_wipe()
--! exec
INSERT INTO audit VALUES ('x')

--! name: trigger-function-through-driver
--! class: indirect-write
--! exec
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory WHERE sku = NEW.sku; RETURN NULL; END $$
--! exec
CREATE TRIGGER audit_wipe AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION trg_wipe()
--! exec
INSERT INTO audit VALUES ('a')

--! name: statement-trigger-zero-rows
--! class: indirect-write
--! note: a statement trigger fires even when the statement touches no row
--! setup
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NULL; END $$;
--! exec
CREATE TRIGGER staging_wipe AFTER DELETE ON staging FOR EACH STATEMENT EXECUTE FUNCTION trg_wipe()
--! exec
DELETE FROM staging WHERE false

--! name: trigger-from-migration
--! policy: catalog
--! class: indirect-write
--! setup
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NULL; END $$;
CREATE TRIGGER audit_wipe AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION trg_wipe();
--! exec
INSERT INTO audit VALUES ('x')

--! name: deferred-constraint-trigger
--! class: indirect-write
--! setup
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NULL; END $$;
--! exec
CREATE CONSTRAINT TRIGGER audit_wipe AFTER INSERT ON audit DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION trg_wipe()
--! exec
BEGIN
--! exec
INSERT INTO audit VALUES ('x')
--! exec
COMMIT

--! name: view-instead-of-trigger
--! class: indirect-write
--! setup
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END $$;
--! exec
CREATE VIEW staging_v AS SELECT * FROM staging
--! exec
CREATE TRIGGER staging_v_wipe INSTEAD OF UPDATE ON staging_v FOR EACH ROW EXECUTE FUNCTION trg_wipe()
--! exec
UPDATE staging_v SET q = 1 WHERE sku = 'a'

--! name: view-instead-of-trigger-from-migration
--! policy: catalog
--! class: indirect-write
--! setup
CREATE FUNCTION trg_wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory WHERE sku = OLD.sku; RETURN OLD; END $$;
CREATE VIEW staging_v AS SELECT * FROM staging;
CREATE TRIGGER staging_v_wipe INSTEAD OF DELETE ON staging_v FOR EACH ROW EXECUTE FUNCTION trg_wipe();
--! exec
DELETE FROM staging_v WHERE sku = 'a'

--! name: event-trigger
--! class: indirect-write
--! setup
CREATE FUNCTION evt_wipe() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; END $$;
--! exec
CREATE EVENT TRIGGER wipe_on_ddl ON ddl_command_end EXECUTE FUNCTION evt_wipe()
--! exec
CREATE TABLE scratch (x int)

--! name: cursor-over-writer
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_inventory() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0, note = 'wiped' $$;
--! exec
BEGIN
--! exec
DECLARE c CURSOR FOR SELECT wipe_inventory()
--! exec
FETCH ALL FROM c
--! exec
COMMIT

--! name: domain-check-calls-writer
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_check(v int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = v; RETURN true; END $$;
--! exec
CREATE DOMAIN checked_int AS int CHECK (wipe_check(VALUE))
--! exec
SELECT 0::checked_int

--! name: volatile-default-on-add-column
--! class: indirect-write
--! setup
CREATE FUNCTION wipe_bool() RETURNS bool LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory WHERE sku = 'a'; RETURN true; END $$;
--! exec
ALTER TABLE staging ADD COLUMN w bool DEFAULT wipe_bool()

--! name: stable-wrapper-from-migration
--! class: indirect-write
--! note: the wrapper is STABLE; the function it calls is not
--! setup
CREATE FUNCTION w() RETURNS void LANGUAGE sql VOLATILE AS $$ UPDATE inventory SET quantity = 0 $$;
CREATE FUNCTION stock_level() RETURNS int LANGUAGE plpgsql STABLE AS $$ BEGIN PERFORM w(); RETURN 1; END $$;
--! query
SELECT stock_level()
