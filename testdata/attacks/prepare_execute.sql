-- Class 1: SQL-level PREPARE/EXECUTE, and EXECUTE of the statements the inner driver
-- prepared. sqlfence fences a statement when the driver prepares it, and binds the epoch
-- when database/sql executes it; an EXECUTE sent as SQL text names the server-side
-- statement and supplies every parameter itself, the epoch included.
--
-- pgx v5 names what it prepares predictably (github.com/jackc/pgx/v5 conn.go,
-- internal/stmtcache): database/sql's Prepare becomes "stmt_" + hex(sha256(text))[:48],
-- its statement cache "stmtcache_" + the same digest. The text is the fenced text, which
-- sqlfence produces deterministically: an attacker can compute the name offline
-- ({{stmtname}}, {{stmtcache}}) or read it from pg_prepared_statements.
--
-- Format: see the comment at the top of attack_test.go.

--! name: execute-driver-prepared-update
--! class: prepare-execute
--! prepare
UPDATE inventory SET quantity = $1 WHERE sku = $2
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'UPDATE inventory%'
--! exec
EXECUTE ${name}(0, 'a', 99)

--! name: execute-driver-prepared-delete
--! class: prepare-execute
--! prepare
DELETE FROM inventory WHERE sku = $1
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'DELETE FROM inventory%'
--! exec
EXECUTE ${name}('a', 99)

--! name: execute-driver-prepared-insert-poison
--! class: prepare-execute
--! note: a row stamped 99 fences every later writer up to epoch 99
--! prepare
INSERT INTO inventory (sku, quantity) VALUES ($1, $2)
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO inventory%'
--! exec
EXECUTE ${name}('z', 1, 99)

--! name: execute-driver-prepared-upsert
--! class: prepare-execute
--! prepare
INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO inventory%'
--! exec
EXECUTE ${name}('a', 0, 99)

--! name: execute-driver-prepared-billing
--! class: prepare-execute
--! prepare
UPDATE billing.invoices SET total = $1 WHERE id = $2
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'UPDATE billing.invoices%'
--! exec
EXECUTE ${name}(0, 1, 99)

--! name: execute-driver-prepared-merge
--! class: prepare-execute
--! prepare
MERGE INTO inventory i USING staging s ON i.sku = s.sku WHEN MATCHED THEN UPDATE SET quantity = s.q
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'MERGE INTO inventory%'
--! exec
EXECUTE ${name}(99)

--! name: execute-computed-stmt-name
--! class: prepare-execute
--! note: the name is computed from the fenced text, without reading the catalog
--! prepare
UPDATE inventory SET quantity = $1 WHERE sku = $2
--! exec template
EXECUTE {{stmtname (fenced "UPDATE inventory SET quantity = $1 WHERE sku = $2")}}(0, 'b', 99)

--! name: execute-stmtcache-name
--! class: prepare-execute
--! note: a fenced write that ran once (stale: fenced; fresh: written) left its statement in pgx's cache
--! exec args=[1, "a"]
UPDATE inventory SET quantity = $1 WHERE sku = $2
--! exec template
EXECUTE {{stmtcache (fenced "UPDATE inventory SET quantity = $1 WHERE sku = $2")}}(0, 'b', 99)

--! name: explain-analyze-execute
--! class: prepare-execute
--! prepare
UPDATE inventory SET quantity = $1 WHERE sku = $2
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'UPDATE inventory%'
--! exec
EXPLAIN ANALYZE EXECUTE ${name}(0, 'a', 99)

--! name: execute-inside-transaction
--! class: prepare-execute
--! prepare
UPDATE inventory SET quantity = $1 WHERE sku = $2
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'UPDATE inventory%'
--! exec
BEGIN
--! exec
EXECUTE ${name}(0, 'a', 99)
--! exec
COMMIT

--! name: execute-in-multi-statement
--! class: prepare-execute
--! prepare
UPDATE inventory SET quantity = $1 WHERE sku = $2
--! query capture=name
SELECT name FROM pg_prepared_statements WHERE statement LIKE 'UPDATE inventory%'
--! exec
SELECT 1; EXECUTE ${name}(0, 'a', 99); SELECT 2

--! name: sql-prepare-protected-write
--! class: prepare-execute
--! exec
PREPARE p AS UPDATE inventory SET quantity = 0
--! exec
EXECUTE p

--! name: sql-prepare-cte-write
--! class: prepare-execute
--! exec
PREPARE p AS WITH d AS (DELETE FROM inventory RETURNING 1) SELECT count(*) FROM d
--! exec
EXECUTE p

--! name: sql-prepare-unicode-escaped-name
--! class: prepare-execute
--! exec
PREPARE p AS DELETE FROM U&"\0069nventory"
--! exec
EXECUTE p

--! name: sql-prepare-with-epoch-parameter
--! class: prepare-execute
--! note: the statement carries its own fence, with an epoch the caller picks
--! exec
PREPARE p(bigint) AS UPDATE inventory SET quantity = 0, writer_epoch = $1 WHERE writer_epoch < $1
--! exec
EXECUTE p(99)

--! name: sql-prepare-calls-writer-function
--! class: prepare-execute
--! setup
CREATE FUNCTION wipe_inventory() RETURNS void LANGUAGE sql AS $$ UPDATE inventory SET quantity = 0, note = 'wiped' $$;
--! exec
PREPARE p AS SELECT wipe_inventory()
--! exec
EXECUTE p

--! name: sql-prepare-write-through-view
--! class: prepare-execute
--! setup
CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory;
--! exec
PREPARE p AS UPDATE stock SET quantity = 0
--! exec
EXECUTE p
