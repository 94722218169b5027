UPDATE inventory SET (quantity, note) = (SELECT q, n FROM staging WHERE staging.sku = inventory.sku) WHERE sku IS DISTINCT FROM $1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET (quantity, note) = (SELECT q, n FROM staging WHERE staging.sku = inventory.sku), writer_epoch = $2::bigint WHERE (sku IS DISTINCT FROM $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint
