-- Everyday reads and helpers: clocks, sequences, UUIDs, EXPLAIN without ANALYZE, views
-- and STABLE functions, reads of protected tables, unprotected writes, sqlcommenter
-- and planner-hint comments; DISCARD and DEALLOCATE last (they reset the session).
-- Format: see the comment at the top of benign_test.go.

--! setup
CREATE TABLE users (id bigserial PRIMARY KEY, name text, deleted_at timestamptz);
CREATE SEQUENCE order_numbers;
INSERT INTO users (name) VALUES ('ann'), ('bob');
CREATE VIEW active_users AS SELECT id, name FROM users WHERE deleted_at IS NULL;
CREATE VIEW stock AS SELECT sku, quantity FROM inventory;
CREATE FUNCTION user_count() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM users';
CREATE FUNCTION stock_of(s text) RETURNS int LANGUAGE sql STABLE AS 'SELECT quantity FROM inventory WHERE sku = s';
CREATE FUNCTION slug(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT lower(regexp_replace(t, '[^a-zA-Z0-9]+', '-', 'g')) $$;

--! name: misc-now
SELECT now()

--! name: misc-clock
SELECT clock_timestamp(), statement_timestamp(), current_date

--! name: misc-nextval
SELECT nextval('order_numbers')

--! name: misc-nextval-serial
SELECT nextval(pg_get_serial_sequence('users', 'id'))

--! name: misc-currval
SELECT currval('order_numbers')

--! name: misc-uuid
SELECT gen_random_uuid()

--! name: misc-random
SELECT random(), md5(random()::text)

--! name: misc-select-parameter
--! args: [41]
SELECT $1::int + 1

--! name: misc-values
VALUES (1, 'a'), (2, 'b')

--! name: misc-table
TABLE staging

--! name: misc-recursive-cte
WITH RECURSIVE t(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT sum(n) FROM t

--! name: misc-jsonb
--! args: ["{\"a\": {\"b\": 1}}"]
SELECT $1::jsonb -> 'a' ->> 'b'

--! name: misc-view
SELECT id, name FROM active_users ORDER BY id

--! name: misc-view-over-protected
SELECT sku, quantity FROM stock ORDER BY sku

--! name: misc-stable-function
SELECT user_count()

--! name: misc-stable-function-protected-read
--! args: ["a"]
SELECT stock_of($1)

--! name: misc-immutable-function
SELECT slug('Hello, World')

--! name: misc-read-protected
--! args: ["a"]
SELECT quantity, writer_epoch FROM inventory WHERE sku = $1

--! name: misc-read-protected-for-update
--! args: ["a"]
SELECT quantity FROM inventory WHERE sku = $1 FOR UPDATE

--! name: misc-read-protected-aggregate
SELECT count(*), max(writer_epoch) FROM inventory

--! name: misc-read-billing
SELECT id, total FROM billing.invoices ORDER BY id

--! name: misc-unprotected-write-mentions-name
UPDATE staging SET n = 'inventory' WHERE sku = 'c'

--! name: misc-unprotected-insert-select-from-protected
INSERT INTO audit (sku) SELECT sku FROM inventory WHERE quantity > 0

--! name: misc-point-read
SELECT 1 FROM users WHERE id = 1

--! name: misc-explain-select
EXPLAIN SELECT * FROM users WHERE id = 1

--! name: misc-explain-json
EXPLAIN (FORMAT JSON, COSTS false) SELECT * FROM active_users

--! name: misc-explain-protected-write
--! source: plain EXPLAIN plans the write without running it
EXPLAIN UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: misc-explain-analyze-false
EXPLAIN (ANALYZE false, VERBOSE) DELETE FROM inventory

--! name: misc-sqlcommenter
--! source: sqlcommenter (OpenTelemetry, gorm/sqlcommenter)
--! args: [1]
SELECT * FROM users WHERE id = $1 /*action='show',controller='users',framework='gorm',traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/

--! name: misc-sqlcommenter-protected-read
--! args: ["b"]
SELECT quantity FROM inventory WHERE sku = $1 /*db_driver='sqlfence',traceparent='00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/

--! name: misc-leading-comment
/* app=worker,job=reindex */ SELECT count(*) FROM users

--! name: misc-line-comment
-- report: daily active users
SELECT count(*) FROM active_users

--! name: misc-planner-hint
/*+ SeqScan(users) */ SELECT * FROM users WHERE name = 'ann'

--! name: misc-read-protected-long-or
--! source: an ORM's Where(...).Or(...) over a batch of 1001 keys
--! template
SELECT sku, quantity FROM inventory WHERE {{repeat "sku = 'x' OR " 1000}}sku = 'a'

--! name: misc-read-protected-long-in
--! source: a batch lookup with an inlined IN list
--! template
SELECT sku FROM inventory WHERE sku IN ({{repeat "'x', " 3000}}'a')

--! name: misc-discard-plans
DISCARD PLANS

--! name: misc-discard-temp
DISCARD TEMP

--! name: misc-deallocate-all
DEALLOCATE ALL

--! name: misc-discard-all
DISCARD ALL
