-- Class 7: DDL through the driver that moves the ground the fence stands on — the
-- protected table, its schema or its epoch column renamed (and a fresh one added), the
-- table moved, made a child or a partition of an unprotected table, the epoch column
-- made nullable or retyped, triggers switched off or added, a rule or a view put in
-- front — followed by an ordinary write. Some DDL changes the rows by itself
-- (ALTER COLUMN … TYPE … USING, DROP COLUMN, DROP TABLE). The policy is the default one
-- (no resolve: catalog).
--
-- Format: see the comment at the top of attack_test.go.

--! name: rename-table-then-write
--! class: ddl
--! exec
ALTER TABLE inventory RENAME TO stock
--! exec
UPDATE stock SET quantity = 0

--! name: rename-table-to-quoted-case
--! class: ddl
--! exec
ALTER TABLE inventory RENAME TO "Inventory"
--! exec
DELETE FROM "Inventory" WHERE sku = 'a'

--! name: rename-table-and-put-decoy
--! class: ddl
--! exec
ALTER TABLE inventory RENAME TO inventory_real
--! exec
CREATE TABLE inventory (LIKE inventory_real INCLUDING ALL)
--! exec
UPDATE inventory_real SET quantity = 0

--! name: rename-schema-then-write
--! class: ddl
--! exec
ALTER SCHEMA billing RENAME TO ledger
--! exec
UPDATE ledger.invoices SET total = 0

--! name: set-schema-qualified-entry
--! class: ddl
--! note: the policy names billing.invoices; public.invoices is another table to it
--! exec
ALTER TABLE billing.invoices SET SCHEMA public
--! exec
UPDATE public.invoices SET total = 0

--! name: set-schema-unqualified-entry
--! class: ddl
--! note: an unqualified entry matches inventory in every schema
--! exec
CREATE SCHEMA archive
--! exec
ALTER TABLE inventory SET SCHEMA archive
--! exec
UPDATE archive.inventory SET quantity = 0

--! name: rename-epoch-column-add-fresh
--! class: ddl
--! exec
ALTER TABLE inventory RENAME COLUMN writer_epoch TO old_epoch
--! exec
ALTER TABLE inventory ADD COLUMN writer_epoch bigint NOT NULL DEFAULT 0
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: inherit-into-unprotected-parent
--! class: ddl
--! exec
CREATE TABLE catalog_items (sku text, quantity int)
--! exec
ALTER TABLE inventory INHERIT catalog_items
--! exec
UPDATE catalog_items SET quantity = 0

--! name: attach-as-partition-of-unprotected
--! class: ddl
--! exec
CREATE TABLE all_stock (sku text NOT NULL, quantity int NOT NULL, note text, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku)
--! exec
ALTER TABLE all_stock ATTACH PARTITION inventory FOR VALUES IN ('a', 'b')
--! exec
DELETE FROM all_stock WHERE sku = 'a'

--! name: epoch-drop-not-null-then-null
--! class: ddl
--! exec
ALTER TABLE inventory ALTER COLUMN writer_epoch DROP NOT NULL
--! exec
ALTER TABLE inventory ALTER COLUMN writer_epoch TYPE bigint USING NULL

--! name: epoch-retype-int-then-write
--! class: ddl
--! exec
ALTER TABLE inventory ALTER COLUMN writer_epoch TYPE int USING writer_epoch - 5
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: value-retype-using
--! class: ddl
--! note: DDL that rewrites values is sent untouched (docs/policy.md, "What sqlfence cannot see": "nothing" closes it)
--! exec
ALTER TABLE inventory ALTER COLUMN quantity TYPE int USING 0

--! name: drop-epoch-column
--! class: ddl
--! exec
ALTER TABLE inventory DROP COLUMN writer_epoch

--! name: drop-table
--! class: ddl
--! exec
DROP TABLE inventory CASCADE

--! name: view-over-protected-then-write
--! class: ddl
--! exec
CREATE VIEW stock AS SELECT * FROM inventory
--! exec
UPDATE stock SET quantity = 0

--! name: trigger-on-protected-keeps-epoch
--! class: ddl
--! note: the fresh write lands, but the row keeps epoch 5, so a stale writer at 6 can still overwrite it
--! exec
CREATE FUNCTION keep_epoch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.writer_epoch := OLD.writer_epoch; RETURN NEW; END $$
--! exec
CREATE TRIGGER keep BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION keep_epoch()
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: trigger-on-protected-raises-epoch
--! class: ddl
--! exec
CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.writer_epoch := 1000000; RETURN NEW; END $$
--! exec
CREATE TRIGGER poison BEFORE INSERT OR UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION poison()
--! exec
INSERT INTO inventory (sku, quantity) VALUES ('z', 1)

--! name: rule-on-protected-calls-writer
--! class: ddl
--! note: the rule's action runs for the rows the fenced UPDATE matches, and writes billing.invoices without an epoch
--! setup
CREATE FUNCTION wipe_invoices() RETURNS void LANGUAGE sql AS $$ UPDATE billing.invoices SET total = 0 $$;
--! exec
CREATE RULE also_wipe AS ON UPDATE TO inventory DO ALSO SELECT wipe_invoices()
--! exec
UPDATE inventory SET note = 'n' WHERE sku = 'a'

--! name: rule-on-protected-instead
--! class: ddl
--! note: a rule that writes the protected table itself is refused
--! exec
CREATE RULE swap AS ON INSERT TO inventory DO INSTEAD UPDATE inventory SET quantity = NEW.quantity WHERE sku = NEW.sku
--! exec
INSERT INTO inventory (sku, quantity) VALUES ('a', 0)

--! name: disable-trigger-guard
--! class: ddl
--! note: a migration installed a row trigger that rejects lowering an epoch; the session switches it off, then a stale write meets a rewired <
--! setup
CREATE FUNCTION no_lower() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.writer_epoch < OLD.writer_epoch THEN RAISE EXCEPTION 'epoch lowered'; END IF; RETURN NEW; END $$;
CREATE TRIGGER no_lower BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION no_lower();
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always);
--! exec
ALTER TABLE inventory DISABLE TRIGGER ALL
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: replication-role-skips-triggers
--! class: ddl
--! note: session_replication_role = replica skips ordinary triggers, the guard's included
--! setup
CREATE FUNCTION no_lower() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.writer_epoch < OLD.writer_epoch THEN RAISE EXCEPTION 'epoch lowered'; END IF; RETURN NEW; END $$;
CREATE TRIGGER no_lower BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION no_lower();
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always);
--! exec
SET session_replication_role = replica
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: guard-trigger-holds-alone
--! class: ddl
--! note: control: the same rewired <, but the migration's trigger stays on and rejects the stale write
--! setup
CREATE FUNCTION no_lower() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.writer_epoch < OLD.writer_epoch THEN RAISE EXCEPTION 'epoch lowered'; END IF; RETURN NEW; END $$;
CREATE TRIGGER no_lower BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION no_lower();
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always);
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'
