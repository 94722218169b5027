-- What migrations and ORMs send under resolve: catalog and ddl: allow, and that can
-- reach no protected row: CREATE EXTENSION of the extensions shipped with PostgreSQL
-- that sqlfence reviewed (installed already, IF NOT EXISTS, or not yet), tables
-- whose defaults call their functions, views PostgreSQL cannot write through over a
-- protected table (a join, DISTINCT, GROUP BY, a set operation, LIMIT), and the
-- functional notation for a column, quantity(i) for i.quantity. Format: see the
-- comment at the top of benign_test.go.

--! policy: catalog ddl
--! setup
CREATE EXTENSION IF NOT EXISTS pgcrypto;

--! name: ddl-ext-pgcrypto-installed
--! source: gorm's test suite (tests_test.go)
CREATE EXTENSION IF NOT EXISTS pgcrypto

--! name: ddl-ext-uuid-ossp
--! source: gorm's test suite (tests_test.go)
CREATE EXTENSION IF NOT EXISTS "uuid-ossp"

--! name: ddl-ext-uuid-ossp-again
CREATE EXTENSION IF NOT EXISTS "uuid-ossp"

--! name: ddl-ext-citext
CREATE EXTENSION citext

--! name: ddl-ext-hstore-schema
CREATE EXTENSION IF NOT EXISTS hstore SCHEMA public

--! name: ddl-table-uuid-default
--! source: gorm (a uuid primary key with default:uuid_generate_v4())
CREATE TABLE "tokens" ("id" uuid DEFAULT uuid_generate_v4(),"name" text,PRIMARY KEY ("id"))

--! name: ddl-table-gen-random-uuid
CREATE TABLE "sessions" ("id" uuid DEFAULT gen_random_uuid(),"salt" bytea DEFAULT gen_random_bytes(8),PRIMARY KEY ("id"))

--! name: ddl-insert-uuid-default
INSERT INTO "tokens" ("name") VALUES ('a') RETURNING "id"

--! name: ddl-table-citext-hstore
CREATE TABLE emails (addr citext PRIMARY KEY, tags hstore)

--! name: ddl-citext-compare
--! args: ["ANN@example.com"]
SELECT addr FROM emails WHERE addr = $1

--! name: ddl-view-join-protected
--! source: gorm's TestViews (a view of users JOIN pets)
CREATE VIEW inventory_notes AS SELECT i.sku, i.quantity, s.n FROM inventory i JOIN staging s ON s.sku = i.sku

--! name: ddl-view-join-protected-replace
CREATE OR REPLACE VIEW inventory_notes AS SELECT i.sku, i.quantity, s.n FROM inventory AS i LEFT JOIN staging AS s ON s.sku = i.sku

--! name: ddl-view-comma-join
CREATE VIEW inventory_pairs AS SELECT a.sku AS a, b.sku AS b FROM inventory a, inventory b

--! name: ddl-view-group-by
CREATE VIEW inventory_totals AS SELECT sku, sum(quantity) AS total FROM inventory GROUP BY sku

--! name: ddl-view-distinct
CREATE VIEW inventory_skus AS SELECT DISTINCT sku FROM inventory

--! name: ddl-view-union
CREATE VIEW all_skus AS SELECT sku FROM inventory UNION SELECT sku FROM staging

--! name: ddl-view-limit
CREATE VIEW top_inventory AS SELECT * FROM inventory ORDER BY quantity DESC LIMIT 10

--! name: ddl-view-subquery
CREATE VIEW low_inventory AS SELECT * FROM (SELECT sku, quantity FROM inventory WHERE quantity < 5) low

--! name: ddl-view-read-join
SELECT sku, quantity, n FROM inventory_notes WHERE sku = 'a'

--! name: column-functional-notation
--! source: PostgreSQL's functional notation for a column (issue 33)
SELECT quantity(i) FROM inventory i

--! name: column-functional-notation-where
--! args: [1]
SELECT sku(i.*), quantity(i) FROM inventory AS i WHERE quantity(i) > $1
