UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = quantity - $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
