EXPLAIN UPDATE inventory SET quantity = 1 WHERE sku = $1
---- sent ----
PASS
