INSERT INTO inventory (sku, quantity) SELECT sku, q FROM staging INTERSECT SELECT $1, $2 EXCEPT ALL (SELECT 'z', 0)
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, q, $3::bigint FROM staging INTERSECT SELECT $1, $2, $3::bigint EXCEPT ALL (SELECT 'z', 0, $3::bigint)
