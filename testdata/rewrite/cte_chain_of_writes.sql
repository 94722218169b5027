WITH a AS (SELECT sku FROM staging WHERE NOT gone),
     b AS (DELETE FROM inventory WHERE sku IN (SELECT sku FROM a) RETURNING sku),
     c AS (INSERT INTO audit (sku) SELECT sku FROM b RETURNING sku)
SELECT count(*) FROM c
---- sent ----
/*sqlfence fenced: inventory*/ WITH a AS (SELECT sku FROM staging WHERE NOT gone),
     b AS (DELETE FROM inventory WHERE (sku IN (SELECT sku FROM a)) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint RETURNING sku),
     c AS (INSERT INTO audit (sku) SELECT sku FROM b RETURNING sku)
SELECT count(*) FROM c
