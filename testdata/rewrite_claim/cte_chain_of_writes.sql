WITH a AS (SELECT sku FROM staging WHERE NOT gone),
     b AS (DELETE FROM inventory WHERE sku IN (SELECT sku FROM a) RETURNING sku),
     c AS (INSERT INTO audit (sku) SELECT sku FROM b RETURNING sku)
SELECT count(*) FROM c

---- sent ----
/*sqlfence fenced: inventory*/ WITH a AS (SELECT sku FROM staging WHERE NOT gone),
     b AS (DELETE FROM inventory WHERE (sku IN (SELECT sku FROM a)) AND inventory.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) RETURNING sku),
     c AS (INSERT INTO audit (sku) SELECT sku FROM b RETURNING sku)
SELECT count(*) FROM c

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ WITH a AS (SELECT sku FROM staging WHERE NOT gone),
     b AS (DELETE FROM inventory WHERE (sku IN (SELECT sku FROM a)) AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL RETURNING sku),
     c AS (INSERT INTO audit (sku) SELECT sku FROM b RETURNING sku)
SELECT count(*) FROM c

