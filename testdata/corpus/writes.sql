-- Differential corpus: protected writes sqlfence fences. See differential_test.go.
--
-- Each entry starts with a `--! name:` line; the `--!` lines after it are directives,
-- everything else up to the next entry is the statement, sent byte for byte
-- (comments and semicolons included; blank lines around it are trimmed).
--
--   --! name: NAME          unique, required
--   --! expect: write       write | refuse | pass, required
--   --! args: [JSON…]       the statement's arguments (integers become int64)
--   --! paths: exec,query   run only through these (exec, query, prepare; default all)
--   --! changes: none       a fresh write may legitimately change nothing
--   --! bug: WHAT           a known, unfixed sqlfence bug: the entry is skipped
--
-- The data (differential_test.go, corpusSeed): every protected row holds epoch 5;
-- stale runs use epoch 3, fresh runs epoch 7. PostgreSQL 15 syntax only.

--! name: update_basic
--! expect: write
--! args: ["a", 1]
UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1

--! name: update_only_alias_or
--! expect: write
--! args: ["a", "b"]
UPDATE ONLY public.inventory AS i SET quantity = 0 WHERE i.sku = $1 OR i.sku = $2

--! name: update_no_where
--! expect: write
UPDATE inventory SET note = 'all'

--! name: update_self_join
--! expect: write
--! args: ["b"]
UPDATE inventory SET quantity = t2.quantity + 1 FROM inventory AS t2 WHERE inventory.sku = t2.sku AND t2.sku = $1

--! name: update_multi_assign_subquery
--! expect: write
--! args: ["a"]
UPDATE inventory SET (quantity, note) = (SELECT q, n FROM staging WHERE staging.sku = inventory.sku) WHERE sku = $1

--! name: update_multi_assign_row
--! expect: write
--! args: [5, "n", "c"]
UPDATE inventory SET (quantity, note) = ROW($1, $2) WHERE sku = $3

--! name: update_reused_params
--! expect: write
--! args: [10, "b"]
UPDATE inventory SET quantity = $1 + $1, note = $2 WHERE sku = $2 OR quantity = $1

--! name: update_twelve_params
--! expect: write
--! args: ["a", "b", "z3", "z4", "z5", "z6", "z7", "z8", "z9", "z10", "z11", 99]
UPDATE inventory SET quantity = $12 WHERE sku IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)

--! name: update_case_in_subquery
--! expect: write
--! args: [15]
UPDATE inventory SET quantity = CASE WHEN quantity > $1 THEN quantity - $1 ELSE 0 END WHERE sku IN (SELECT sku FROM staging)

--! name: update_comments_between_tokens
--! expect: write
--! args: [3, "a"]
/*0*/UPDATE/*1*/inventory/*2*/SET/*3*/quantity/*4*/=/*5*/$1/*6*/WHERE/*7*/sku/*8*/=/*9*/$2/*10*/;/*11*/

--! name: delete_line_comments_semicolons
--! expect: write
--! args: ["c"]
-- leading comment
DELETE -- x
FROM -- y
inventory -- z; not the end
WHERE -- w
sku = $1 -- v
;;

--! name: delete_using_returning
--! expect: write
DELETE FROM inventory AS i USING staging s WHERE i.sku = s.sku AND s.gone RETURNING i.sku

--! name: delete_setop_subquery
--! expect: write
DELETE FROM inventory WHERE sku IN (SELECT sku FROM staging UNION SELECT 'c')

--! name: delete_other_schema_returning
--! expect: write
DELETE FROM other.inventory RETURNING sku

--! name: insert_values_rows
--! expect: write
--! args: ["n1", 1, "n2", 2]
INSERT INTO inventory (sku, quantity, note) VALUES ($1, $2, DEFAULT), ($3, $4, 'lit')

--! name: insert_select
--! expect: write
INSERT INTO inventory (sku, quantity) SELECT sku || 'x', q FROM staging WHERE NOT gone

--! name: insert_set_operations
--! expect: write
--! args: ["f", 2]
INSERT INTO inventory (sku, quantity) SELECT 'e', 1 UNION ALL (SELECT $1, $2) EXCEPT SELECT sku, quantity FROM inventory

--! name: insert_default_values_returning
--! expect: write
INSERT INTO reports DEFAULT VALUES RETURNING id

--! name: insert_overriding_system_value
--! expect: write
--! args: ["forced id"]
INSERT INTO reports (id, body) OVERRIDING SYSTEM VALUE VALUES (50, $1)

--! name: insert_overriding_user_value
--! expect: write
INSERT INTO reports (id, body) OVERRIDING USER VALUE SELECT 1, 'id from the identity'

--! name: upsert_do_update
--! expect: write
--! args: ["a", 5, "new", 1]
INSERT INTO inventory AS i (sku, quantity) VALUES ($1, $2), ($3, $4) ON CONFLICT (sku) DO UPDATE SET quantity = i.quantity + excluded.quantity

--! name: upsert_do_update_where_returning
--! expect: write
--! args: ["b", 50]
INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity WHERE inventory.quantity < excluded.quantity RETURNING quantity

--! name: upsert_do_nothing
--! expect: write
INSERT INTO inventory (sku, quantity) VALUES ('a', 1), ('z', 2) ON CONFLICT DO NOTHING

--! name: merge_every_clause_kind
--! expect: write
MERGE INTO inventory AS t USING staging AS s ON t.sku = s.sku
WHEN MATCHED AND s.gone THEN DELETE
WHEN MATCHED AND s.q = 0 THEN DO NOTHING
WHEN MATCHED THEN UPDATE SET quantity = s.q, note = s.n
WHEN NOT MATCHED AND s.q > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)

--! name: merge_insert_default_values
--! expect: write
MERGE INTO reports r USING (VALUES (1), (77)) v(id) ON r.id = v.id
WHEN MATCHED THEN UPDATE SET body = 'merged'
WHEN NOT MATCHED THEN INSERT DEFAULT VALUES

--! name: merge_with_cte_params
--! expect: write
--! args: ["a", 42]
WITH src AS (SELECT $1::text AS sku, $2::int AS q)
MERGE INTO inventory i USING src ON i.sku = src.sku
WHEN MATCHED THEN UPDATE SET quantity = src.q
WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (src.sku, src.q)

--! name: cte_update_feeds_unprotected_insert
--! expect: write
--! args: ["a"]
WITH moved AS (UPDATE inventory SET quantity = 0 WHERE sku = $1 RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved

--! name: cte_chain_of_writes
--! expect: write
WITH a AS (SELECT sku FROM staging WHERE NOT gone),
     b AS (DELETE FROM inventory WHERE sku IN (SELECT sku FROM a) RETURNING sku),
     c AS (INSERT INTO audit (sku) SELECT sku FROM b RETURNING sku)
SELECT count(*) FROM c

--! name: cte_recursive_then_update
--! expect: write
--! args: [1]
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)
UPDATE billing.invoices SET total = total + (SELECT sum(n) FROM r) WHERE id = $1

--! name: cte_two_protected_tables
--! expect: write
--! args: ["w", 1, 2]
WITH x AS (INSERT INTO inventory (sku, quantity) VALUES ($1, $2) RETURNING sku) UPDATE billing.invoices SET total = 0 WHERE id = $3

--! name: explain_analyze_update
--! expect: write
--! args: ["a"]
EXPLAIN ANALYZE UPDATE inventory SET quantity = 1 WHERE sku = $1

--! name: explain_analyze_options_delete
--! expect: write
--! args: [2]
EXPLAIN (ANALYZE, COSTS off, FORMAT JSON) DELETE FROM billing.invoices WHERE id = $1

--! name: explain_analyse_verbose_insert
--! expect: write
--! args: ["via explain"]
EXPLAIN ANALYSE VERBOSE INSERT INTO reports (body) VALUES ($1)

--! name: explain_analyze_given_twice
--! expect: write
--! args: ["a"]
EXPLAIN (ANALYZE false, ANALYZE true) DELETE FROM inventory WHERE sku = $1

--! name: quoted_identifiers
--! expect: write
--! args: ["c"]
UPDATE "inventory" SET "quantity" = 7 WHERE "sku" = $1

--! name: unicode_escaped_identifier
--! expect: write
--! args: ["c"]
UPDATE U&"\0069nventory" SET quantity = 8 WHERE sku = $1

--! name: unicode_escaped_identifier_uescape
--! expect: write
--! args: ["b"]
DELETE FROM U&"!0069nventory" UESCAPE '!' WHERE sku = $1

--! name: folded_upper_case
--! expect: write
--! args: ["b"]
UPDATE INVENTORY SET Quantity = 9 WHERE SKU = $1

--! name: schema_qualified_repeatable
--! expect: write
--! args: [150, 1]
UPDATE billing.invoices SET total = $1 WHERE id = $2

--! name: quoted_schema_qualified_alias
--! expect: write
--! args: [2]
UPDATE "billing"."invoices" AS "Inv" SET total = 1 WHERE "Inv".id = $1

--! name: other_schema_unqualified_entry
--! expect: write
--! args: ["a"]
UPDATE other.inventory SET quantity = 2 WHERE sku = $1

--! name: own_epoch_column
--! expect: write
--! args: ["new", 1]
UPDATE reports SET body = $1 WHERE id = $2
