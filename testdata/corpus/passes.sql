-- Differential corpus: statements that write no protected table, sent unchanged and
-- never refused. Format: writes.sql.

--! name: unprotected_write_mentions_name
--! expect: pass
UPDATE staging SET q = q + 1 WHERE sku = 'inventory' OR n = 'DELETE FROM inventory'

--! name: string_and_dollar_quotes
--! expect: pass
--! args: ["UPDATE inventory SET quantity = 0"]
SELECT 'DELETE FROM inventory', $$TRUNCATE inventory$$, $1::text /* UPDATE inventory */

--! name: quoted_name_is_another_table
--! expect: pass
--! args: [1]
UPDATE "Inventory" SET quantity = $1

--! name: plain_explain_does_not_run
--! expect: pass
EXPLAIN UPDATE inventory SET quantity = 0

--! name: explain_analyze_false
--! expect: pass
EXPLAIN (ANALYZE false) DELETE FROM inventory

--! name: select_for_update
--! expect: pass
--! args: ["a"]
SELECT quantity FROM inventory WHERE sku = $1 FOR UPDATE

--! name: do_block_reads
--! expect: pass
--! paths: exec
DO $$ DECLARE n int; BEGIN SELECT count(*) INTO n FROM inventory; INSERT INTO audit (sku) VALUES (n::text); END $$

--! name: multi_statement_unprotected
--! expect: pass
--! paths: exec
SELECT 1; INSERT INTO audit (sku) VALUES ('two statements')

--! name: merge_only_not_matched_do_nothing
--! expect: pass
-- A MERGE whose only clause does nothing writes no row.
MERGE INTO inventory t USING staging s ON t.sku = s.sku WHEN NOT MATCHED THEN DO NOTHING
