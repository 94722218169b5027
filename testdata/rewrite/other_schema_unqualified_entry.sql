UPDATE other.inventory SET quantity = 2 WHERE sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE other.inventory SET quantity = 2, writer_epoch = $2::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint
