WITH src AS (SELECT $1::text AS sku, $2::int AS q) MERGE INTO inventory i USING src ON i.sku = src.sku WHEN MATCHED THEN UPDATE SET quantity = src.q WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (src.sku, src.q)
---- sent ----
/*sqlfence fenced: inventory*/ WITH src AS (SELECT $1::text AS sku, $2::int AS q) MERGE INTO inventory i USING src ON i.sku = src.sku WHEN MATCHED AND i.writer_epoch OPERATOR(pg_catalog.<) $3::bigint THEN UPDATE SET quantity = src.q, writer_epoch = $3::bigint WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (src.sku, src.q, $3::bigint)
