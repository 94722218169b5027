-- Differential corpus: statements on protected tables sqlfence refuses. Format: writes.sql.

--! name: truncate
--! expect: refuse
TRUNCATE inventory

--! name: truncate_qualified_list
--! expect: refuse
TRUNCATE TABLE staging, ONLY billing.invoices

--! name: assigns_epoch_column
--! expect: refuse
UPDATE inventory SET quantity = 0, writer_epoch = 99

--! name: assigns_own_epoch_column
--! expect: refuse
--! args: ["x"]
INSERT INTO reports (body, fence_epoch) VALUES ($1, 1)

--! name: insert_without_column_list
--! expect: refuse
INSERT INTO inventory VALUES ('z', 1, NULL, 99)

--! name: multi_statement_string
--! expect: refuse
--! paths: exec
SELECT 1; UPDATE inventory SET quantity = 0

--! name: do_block_write
--! expect: refuse
--! paths: exec
DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$

--! name: do_block_dynamic
--! expect: refuse
--! paths: exec
DO $$ BEGIN EXECUTE 'DELETE FROM inventory'; END $$

--! name: prepare_protected_write
--! expect: refuse
--! paths: exec
PREPARE p AS UPDATE inventory SET quantity = 0

--! name: rule_writing_protected
--! expect: refuse
--! paths: exec
CREATE RULE r AS ON INSERT TO staging DO ALSO UPDATE inventory SET quantity = 0

--! name: copy_of_a_write
--! expect: refuse
--! paths: exec
COPY (DELETE FROM inventory RETURNING sku) TO STDOUT

--! name: write_inside_create_table_as
--! expect: refuse
--! paths: exec
CREATE TABLE moved AS WITH u AS (UPDATE inventory SET quantity = 1 RETURNING sku) SELECT * FROM u
