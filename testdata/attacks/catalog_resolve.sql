-- Class 8: the gaps of `resolve: catalog`, which reads the catalog once, at the first
-- connection, and protects the partitions, inheritance children and auto-updatable views
-- of each protected table as the table itself. What it does not follow: views over views,
-- parents of a protected table (an unprotected partitioned table or inheritance parent
-- whose scans include the protected rows), views with INSTEAD OF triggers, and anything
-- created after that first connection (the steps run after it).
--
-- Format: see the comment at the top of attack_test.go.

--! name: resolved-view-control
--! class: catalog-resolve
--! policy: catalog
--! note: control: an auto-updatable view over the table is fenced like the table
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
--! exec
UPDATE stock SET quantity = 0 WHERE sku = 'a'

--! name: view-over-view
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
CREATE VIEW stock_levels AS SELECT * FROM stock;
--! exec
UPDATE stock_levels SET quantity = 0 WHERE sku = 'a'

--! name: view-over-view-without-epoch
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
CREATE VIEW stock_levels AS SELECT sku, quantity FROM stock;
--! exec
DELETE FROM stock_levels WHERE sku = 'a'

--! name: view-three-levels
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE VIEW v1 AS SELECT * FROM inventory;
CREATE VIEW v2 AS SELECT * FROM v1;
CREATE VIEW v3 AS SELECT sku, quantity FROM v2 WHERE quantity > 0;
--! exec
UPDATE v3 SET quantity = 0

--! name: view-over-billing-in-other-schema
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE SCHEMA reporting;
CREATE VIEW reporting.open_invoices AS SELECT id, total, writer_epoch FROM billing.invoices;
CREATE VIEW reporting.totals AS SELECT id, total FROM reporting.open_invoices;
--! exec
UPDATE reporting.totals SET total = 0

--! name: unprotected-partitioned-parent
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE TABLE all_stock (sku text NOT NULL, quantity int NOT NULL, note text, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku);
ALTER TABLE all_stock ATTACH PARTITION inventory FOR VALUES IN ('a', 'b');
--! exec
UPDATE all_stock SET quantity = 0

--! name: unprotected-inheritance-parent
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE TABLE catalog_items (sku text, quantity int);
ALTER TABLE inventory INHERIT catalog_items;
--! exec
UPDATE catalog_items SET quantity = 0

--! name: view-over-unprotected-parent
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE TABLE catalog_items (sku text, quantity int);
ALTER TABLE inventory INHERIT catalog_items;
CREATE VIEW items AS SELECT * FROM catalog_items;
--! exec
UPDATE items SET quantity = 0

--! name: view-instead-of-trigger-ignores-epoch
--! class: catalog-resolve
--! policy: catalog
--! note: the fence reaches the view; the trigger behind it writes the table without the epoch
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
CREATE FUNCTION stock_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = NEW.quantity WHERE sku = OLD.sku; RETURN NEW; END $$;
CREATE TRIGGER stock_update INSTEAD OF UPDATE ON stock FOR EACH ROW EXECUTE FUNCTION stock_update();
--! exec
UPDATE stock SET quantity = 0 WHERE sku = 'a'

--! name: union-view-instead-of-trigger
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE VIEW everything AS SELECT sku FROM inventory UNION ALL SELECT sku FROM staging;
CREATE FUNCTION everything_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory WHERE sku = OLD.sku; RETURN OLD; END $$;
CREATE TRIGGER everything_delete INSTEAD OF DELETE ON everything FOR EACH ROW EXECUTE FUNCTION everything_delete();
--! exec
DELETE FROM everything WHERE sku = 'a'

--! name: late-view
--! class: catalog-resolve
--! policy: catalog
--! exec
CREATE VIEW late AS SELECT * FROM inventory
--! exec
UPDATE late SET quantity = 0

--! name: late-inheritance-child
--! class: catalog-resolve
--! policy: catalog
--! note: the child's rows are rows of inventory; this one carries no epoch
--! exec
CREATE TABLE inventory_extra () INHERITS (inventory)
--! exec
INSERT INTO inventory_extra (sku, quantity) VALUES ('z', 1)

--! name: late-inherit-table-with-rows
--! class: catalog-resolve
--! policy: catalog
--! exec
CREATE TABLE junk (LIKE inventory)
--! exec
INSERT INTO junk VALUES ('z', 1, NULL, 1000000)
--! exec
ALTER TABLE junk INHERIT inventory

--! name: late-partition
--! class: catalog-resolve
--! policy: catalog
--! setup
DROP TABLE billing.invoices;
CREATE TABLE billing.invoices (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_low PARTITION OF billing.invoices FOR VALUES FROM (0) TO (100);
INSERT INTO billing.invoices VALUES (1, 100, 5);
--! exec
CREATE TABLE billing.invoices_high PARTITION OF billing.invoices FOR VALUES FROM (100) TO (200)
--! exec
INSERT INTO billing.invoices_high (id, total) VALUES (150, 1)

--! name: resolved-partition-control
--! class: catalog-resolve
--! policy: catalog
--! note: control: a partition that existed at the first connection is fenced
--! setup
DROP TABLE billing.invoices;
CREATE TABLE billing.invoices (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_low PARTITION OF billing.invoices FOR VALUES FROM (0) TO (100);
INSERT INTO billing.invoices VALUES (1, 100, 5);
--! exec
UPDATE billing.invoices_low SET total = 0

--! name: late-attach-partition-with-rows
--! class: catalog-resolve
--! policy: catalog
--! setup
DROP TABLE billing.invoices;
CREATE TABLE billing.invoices (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_low PARTITION OF billing.invoices FOR VALUES FROM (0) TO (100);
INSERT INTO billing.invoices VALUES (1, 100, 5);
--! exec
CREATE TABLE billing.loot (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)
--! exec
INSERT INTO billing.loot VALUES (150, 1, 1000000)
--! exec
ALTER TABLE billing.invoices ATTACH PARTITION billing.loot FOR VALUES FROM (100) TO (200)

--! name: detach-partition
--! class: catalog-resolve
--! policy: catalog
--! setup
DROP TABLE billing.invoices;
CREATE TABLE billing.invoices (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_low PARTITION OF billing.invoices FOR VALUES FROM (0) TO (100);
INSERT INTO billing.invoices VALUES (1, 100, 5);
--! exec
ALTER TABLE billing.invoices DETACH PARTITION billing.invoices_low

--! name: renamed-resolved-view
--! class: catalog-resolve
--! policy: catalog
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
--! exec
ALTER VIEW stock RENAME TO stock_renamed
--! exec
UPDATE stock_renamed SET quantity = 0
