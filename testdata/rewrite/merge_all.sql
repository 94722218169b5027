MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
WHEN MATCHED AND s.q = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET quantity = s.q
WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)
---- sent ----
/*sqlfence fenced: inventory*/ MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
WHEN MATCHED AND (s.q = 0) AND i.writer_epoch OPERATOR(pg_catalog.<) $1::bigint THEN DELETE
WHEN MATCHED AND i.writer_epoch OPERATOR(pg_catalog.<) $1::bigint THEN UPDATE SET quantity = s.q, writer_epoch = $1::bigint
WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, $1::bigint)
