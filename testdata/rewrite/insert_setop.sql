INSERT INTO inventory (sku, quantity) SELECT sku, q FROM staging UNION ALL SELECT $1, $2 ORDER BY 1
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, q, $3::bigint FROM staging UNION ALL SELECT $1, $2, $3::bigint ORDER BY 1
