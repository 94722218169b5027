-- Class 9: input that crashes the parser. pg_query's C parser builds a left-deep tree for
-- an operator chain without recursing, but turning the tree into its output recurses once
-- per level: a chain of operators whose left operand is a parenthesised chain, and so on,
-- is depth × chain levels deep while no single level is longer than the bounds sqlfence
-- checks before parsing (nesting, operators per level, tokens per level). A C stack
-- overflow is not a Go panic: it kills the process. These cases run in a re-executed test
-- binary, and a dead process is a failed case.
--
-- The same shapes appear in plain reads that name no protected table (today they skip the
-- parser; an allowlist parses everything), in writes, and inside DO and function bodies
-- (the PL/pgSQL parser sees the body; the SQL bounds saw one string token).
--
-- Format: see the comment at the top of attack_test.go.

--! name: read-nested-operator-chains
--! class: parser-crash
--! exec template
SELECT sku FROM inventory WHERE {{deep 50 900 "1" "+"}} > 0

--! name: write-nested-operator-chains
--! class: parser-crash
--! exec template
UPDATE inventory SET quantity = {{deep 50 900 "1" "+"}} WHERE sku = 'a'

--! name: read-nested-chains-no-protected-name
--! class: parser-crash
--! exec template
SELECT {{deep 50 900 "1" "+"}} AS x

--! name: read-nested-cast-chains
--! class: parser-crash
--! exec template
SELECT sku FROM inventory WHERE quantity = {{deeppost 50 900 "1" "::int"}}

--! name: read-nested-is-null-chains
--! class: parser-crash
--! exec template
SELECT sku FROM inventory WHERE {{deeppost 40 2400 "note" " IS NULL"}}

--! name: read-nested-unary-minus
--! class: parser-crash
--! exec template
SELECT sku FROM inventory WHERE quantity = {{deeppre 60 900 "- " "1"}}

--! name: read-nested-not-chains
--! class: parser-crash
--! exec template
SELECT sku FROM inventory WHERE {{deeppre 60 900 "NOT " "true"}}

--! name: cte-write-nested-chains
--! class: parser-crash
--! exec template
WITH x AS (SELECT {{deep 50 900 "1" "+"}} AS v) UPDATE inventory SET quantity = (SELECT v FROM x) WHERE sku = 'a'

--! name: do-body-nested-chains-with-write
--! class: parser-crash
--! exec template
DO $$ BEGIN PERFORM {{deep 50 900 "1" "+"}}; UPDATE inventory SET quantity = 0; END $$

--! name: do-body-nested-chains-read
--! class: parser-crash
--! exec template
DO $$ BEGIN PERFORM count(*) FROM inventory WHERE {{deep 50 900 "1" "+"}} > 0; END $$

--! name: do-body-nested-chains-no-protected-name
--! class: parser-crash
--! exec template
DO $$ BEGIN PERFORM {{deep 50 900 "1" "+"}}; END $$

--! name: function-body-nested-chains
--! class: parser-crash
--! exec template
CREATE FUNCTION deep_inventory() RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN RETURN (SELECT count(*) FROM inventory WHERE {{deep 50 900 "1" "+"}} > 0); END $$
