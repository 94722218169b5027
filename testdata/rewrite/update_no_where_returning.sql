UPDATE inventory SET quantity = 0 RETURNING sku
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = 0, writer_epoch = $1::bigint WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint RETURNING sku
