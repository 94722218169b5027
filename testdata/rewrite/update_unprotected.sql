UPDATE staging SET q = 1 WHERE sku = $1
---- sent ----
PASS
