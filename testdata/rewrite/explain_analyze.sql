EXPLAIN (ANALYZE, BUFFERS) UPDATE inventory SET quantity = 1 WHERE sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ EXPLAIN (ANALYZE, BUFFERS) UPDATE inventory SET quantity = 1, writer_epoch = $2::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint
