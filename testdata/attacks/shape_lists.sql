-- Decisions by shape: a plan decided on one text applied to another of its shape whose
-- IN lists have other lengths (shape_lists.go), and the epoch written as a literal into
-- a derived text sent without arguments (literal.go, literal_shape.go). Each case first
-- plants a plan with a benign write to an empty key, then writes the rows 'a' and 'b'
-- with texts of the plan's shape: other lengths, the fence's own "$1::bigint" in the
-- application's strings, comments and names, parameters whose epoch number moves.
-- Format: see the comment at the top of attack_test.go.

--! name: shape-in-list-longer-and-shorter
--! class: fence-meaning
--! exec
UPDATE inventory SET quantity = 1 WHERE sku IN ('x', 'y')
--! exec
UPDATE inventory SET quantity = 0 WHERE sku IN ('a', 'b', 'c', 'd', 'e')
--! exec
UPDATE inventory SET quantity = 2 WHERE sku IN ('a')

--! name: shape-in-list-epoch-text-in-strings
--! class: fence-meaning
--! exec
UPDATE inventory SET quantity = 1, note = 'x' WHERE sku IN ('x', 'y')
--! exec
UPDATE inventory SET quantity = 0, note = ' $1::bigint' WHERE sku IN ('a', '$1::bigint', ',$1::bigint', '($1::bigint', 'b')
--! exec
UPDATE inventory SET quantity = 0, note = '''' WHERE sku IN ('a' /* $1::bigint */, 'b') -- $1::bigint

--! name: shape-in-list-quoted-alias
--! class: fence-meaning
--! exec
UPDATE inventory AS "i $1::bigint" SET quantity = 1 WHERE sku IN ('x', 'y')
--! exec
UPDATE inventory AS "i $1::bigint" SET quantity = 0 WHERE sku IN ('a', 'b', 'c')

--! name: shape-in-list-parameters
--! class: fence-meaning
--! exec args=[1, "x", "y"]
UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3)
--! exec args=[0, "a", "b", "c", "d"]
UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4, $5)
--! exec args=[3, "a"]
UPDATE inventory SET quantity = $1 WHERE sku IN ($2)
--! exec args=[4, "a", "b", 9]
UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3) AND writer_epoch < $4

--! name: shape-in-list-parameters-simple
--! class: fence-meaning
--! dsn: default_query_exec_mode=simple_protocol
--! exec args=[1, "x", "y"]
UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3)
--! exec args=[0, "a", "b", "c"]
UPDATE inventory SET quantity = $1 WHERE sku IN ($2, $3, $4)

--! name: shape-in-list-returning-and-conflict
--! class: fence-meaning
--! exec
INSERT INTO inventory (sku, quantity) VALUES ('x', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note IN ('p', 'q')
--! exec
INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 0 WHERE inventory.note IS NULL OR inventory.sku IN ('a', 'b', 'c')
--! exec
INSERT INTO inventory (sku, quantity) VALUES ('a', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 2 WHERE inventory.note IN ('p')
--! query
UPDATE inventory SET quantity = 1 WHERE sku IN ('x', 'y') RETURNING sku IN ('a', 'b')
--! query
UPDATE inventory SET quantity = 0 WHERE sku IN ('a', 'b', 'c') RETURNING sku IN ('a', 'b', 'c')

--! name: shape-in-list-large
--! class: fence-meaning
--! exec
DELETE FROM inventory WHERE sku IN ('x', 'y')
--! exec template
DELETE FROM inventory WHERE sku IN ('a', {{repeat "'z', " 20000}}'b')
