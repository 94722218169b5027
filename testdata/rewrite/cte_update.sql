WITH moved AS (UPDATE inventory SET quantity = 0 WHERE sku = $1 RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved
---- sent ----
/*sqlfence fenced: inventory*/ WITH moved AS (UPDATE inventory SET quantity = 0, writer_epoch = $2::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved
