WITH x AS (INSERT INTO inventory (sku, quantity) VALUES ($1, $2) RETURNING sku) UPDATE billing.invoices SET total = 0 WHERE id = $3
---- sent ----
/*sqlfence fenced: inventory invoices*/ WITH x AS (INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ($1, $2, $4::bigint) RETURNING sku) UPDATE billing.invoices SET total = 0, writer_epoch = $4::bigint WHERE (id = $3) AND invoices.writer_epoch OPERATOR(pg_catalog.<=) $4::bigint
