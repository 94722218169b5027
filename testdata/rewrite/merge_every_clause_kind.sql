MERGE INTO inventory AS t USING staging AS s ON t.sku = s.sku
WHEN MATCHED AND s.gone THEN DELETE
WHEN MATCHED AND s.q = 0 THEN DO NOTHING
WHEN MATCHED THEN UPDATE SET quantity = s.q, note = s.n
WHEN NOT MATCHED AND s.q > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)
---- sent ----
/*sqlfence fenced: inventory*/ MERGE INTO inventory AS t USING staging AS s ON t.sku = s.sku
WHEN MATCHED AND (s.gone) AND t.writer_epoch OPERATOR(pg_catalog.<) $1::bigint THEN DELETE
WHEN MATCHED AND (s.q = 0) AND t.writer_epoch OPERATOR(pg_catalog.<) $1::bigint THEN DO NOTHING
WHEN MATCHED AND t.writer_epoch OPERATOR(pg_catalog.<) $1::bigint THEN UPDATE SET quantity = s.q, note = s.n, writer_epoch = $1::bigint
WHEN NOT MATCHED AND s.q > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, $1::bigint)
