UPDATE inventory SET quantity = $3 WHERE sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = $3, writer_epoch = $4::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $4::bigint
