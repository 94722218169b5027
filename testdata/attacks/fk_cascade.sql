-- Class 6: foreign-key actions. A write to an unprotected parent table cascades into a
-- protected child: ON DELETE CASCADE / SET NULL / SET DEFAULT, ON UPDATE CASCADE,
-- TRUNCATE … CASCADE. The key is made by a migration, or added at run time through the
-- driver. The cascade runs inside the database as a system trigger; nothing of it is in
-- the text.
--
-- Format: see the comment at the top of attack_test.go.

--! name: delete-parent-cascade
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE products (sku text PRIMARY KEY);
INSERT INTO products SELECT sku FROM inventory;
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES products ON DELETE CASCADE;
--! exec
DELETE FROM products WHERE sku = 'a'

--! name: delete-parent-set-null
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE notes (n text PRIMARY KEY);
INSERT INTO notes VALUES ('x');
UPDATE inventory SET note = 'x';
ALTER TABLE inventory ADD FOREIGN KEY (note) REFERENCES notes ON DELETE SET NULL;
--! exec
DELETE FROM notes

--! name: delete-parent-set-default
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE notes (n text PRIMARY KEY);
INSERT INTO notes VALUES ('x'), ('default');
UPDATE inventory SET note = 'x';
ALTER TABLE inventory ALTER COLUMN note SET DEFAULT 'default';
ALTER TABLE inventory ADD FOREIGN KEY (note) REFERENCES notes ON DELETE SET DEFAULT;
--! exec
DELETE FROM notes WHERE n = 'x'

--! name: update-parent-cascade
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE products (sku text PRIMARY KEY);
INSERT INTO products SELECT sku FROM inventory;
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES products ON UPDATE CASCADE;
--! exec
UPDATE products SET sku = 'z' WHERE sku = 'a'

--! name: update-parent-set-null
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE notes (n text PRIMARY KEY);
INSERT INTO notes VALUES ('x');
UPDATE inventory SET note = 'x';
ALTER TABLE inventory ADD FOREIGN KEY (note) REFERENCES notes ON UPDATE SET NULL;
--! exec
UPDATE notes SET n = 'y'

--! name: truncate-parent-cascade
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE products (sku text PRIMARY KEY);
INSERT INTO products SELECT sku FROM inventory;
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES products;
--! exec
TRUNCATE products CASCADE

--! name: cascade-through-unprotected-middle
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE vendors (id int PRIMARY KEY);
CREATE TABLE products (sku text PRIMARY KEY, vendor int REFERENCES vendors ON DELETE CASCADE);
INSERT INTO vendors VALUES (1);
INSERT INTO products SELECT sku, 1 FROM inventory;
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES products ON DELETE CASCADE;
--! exec
DELETE FROM vendors

--! name: cascade-from-data-modifying-cte
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE products (sku text PRIMARY KEY);
INSERT INTO products SELECT sku FROM inventory;
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES products ON DELETE CASCADE;
--! query
WITH gone AS (DELETE FROM products WHERE sku = 'b' RETURNING sku) SELECT count(*) FROM gone

--! name: cascade-into-billing
--! policy: catalog
--! class: fk-cascade
--! setup
CREATE TABLE customers (id int PRIMARY KEY);
INSERT INTO customers VALUES (1);
ALTER TABLE billing.invoices ADD COLUMN customer int NOT NULL DEFAULT 1 REFERENCES customers ON DELETE CASCADE;
--! exec
DELETE FROM customers

--! name: runtime-key-then-delete
--! policy: catalog
--! class: fk-cascade
--! note: the key is added through the driver
--! exec
CREATE TABLE k (sku text PRIMARY KEY)
--! exec
INSERT INTO k VALUES ('a'), ('b')
--! exec
ALTER TABLE inventory ADD CONSTRAINT inventory_k FOREIGN KEY (sku) REFERENCES k ON DELETE CASCADE
--! exec
DELETE FROM k

--! name: runtime-key-not-valid
--! policy: catalog
--! class: fk-cascade
--! note: NOT VALID skips checking the existing rows, so the parent needs only the keys it deletes
--! exec
CREATE TABLE k (sku text PRIMARY KEY)
--! exec
INSERT INTO k VALUES ('b')
--! exec
ALTER TABLE inventory ADD FOREIGN KEY (sku) REFERENCES k ON DELETE CASCADE NOT VALID
--! exec
DELETE FROM k WHERE sku = 'b'

--! name: runtime-key-update-cascade-reports
--! policy: catalog
--! class: fk-cascade
--! exec
CREATE TABLE bodies (body text PRIMARY KEY)
--! exec
INSERT INTO bodies VALUES ('old')
--! exec
ALTER TABLE reports ADD FOREIGN KEY (body) REFERENCES bodies ON UPDATE CASCADE
--! exec
UPDATE bodies SET body = 'rewritten'

--! name: epoch-column-update-cascade
--! policy: catalog
--! class: fk-cascade
--! note: the cascade writes the epoch itself: rows stamped 99 fence every writer up to 99
--! setup
CREATE TABLE epochs (e bigint PRIMARY KEY);
INSERT INTO epochs VALUES (5);
ALTER TABLE inventory ADD FOREIGN KEY (writer_epoch) REFERENCES epochs ON UPDATE CASCADE;
--! exec
UPDATE epochs SET e = 99

--! name: epoch-column-delete-set-default
--! policy: catalog
--! class: fk-cascade
--! note: the cascade lowers the epoch to its default 0: a stale writer then passes the fence
--! setup
CREATE TABLE epochs (e bigint PRIMARY KEY);
INSERT INTO epochs VALUES (0), (5);
ALTER TABLE inventory ADD FOREIGN KEY (writer_epoch) REFERENCES epochs ON DELETE SET DEFAULT;
--! exec
DELETE FROM epochs WHERE e = 5

--! name: runtime-key-on-epoch-column
--! policy: catalog
--! class: fk-cascade
--! exec
CREATE TABLE epochs (e bigint PRIMARY KEY)
--! exec
INSERT INTO epochs VALUES (5)
--! exec
ALTER TABLE billing.invoices ADD FOREIGN KEY (writer_epoch) REFERENCES epochs ON UPDATE CASCADE
--! exec
UPDATE epochs SET e = 1
