UPDATE inventory SET quantity = CASE WHEN quantity > $2 THEN quantity - $2 ELSE 0 END WHERE sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = CASE WHEN quantity > $2 THEN quantity - $2 ELSE 0 END, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
