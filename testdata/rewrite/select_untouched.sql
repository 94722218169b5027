SELECT quantity FROM inventory WHERE sku = $1 FOR UPDATE
---- sent ----
PASS
