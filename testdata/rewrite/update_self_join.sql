UPDATE inventory SET quantity = t2.quantity + 1 FROM inventory AS t2 WHERE inventory.sku = t2.sku AND t2.sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = t2.quantity + 1, writer_epoch = $2::bigint FROM inventory AS t2 WHERE (inventory.sku = t2.sku AND t2.sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint
