UPDATE inventory SET quantity = $12 WHERE sku IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = $12, writer_epoch = $13::bigint WHERE (sku IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $13::bigint
