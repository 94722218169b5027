UPDATE inventory SET quantity = $1 + $1, note = $2 WHERE sku = $2 OR quantity = $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = $1 + $1, note = $2, writer_epoch = $3::bigint WHERE (sku = $2 OR quantity = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
