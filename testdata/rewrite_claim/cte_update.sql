WITH moved AS (UPDATE inventory SET quantity = 0 WHERE sku = $1 RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved

---- sent ----
/*sqlfence fenced: inventory*/ WITH moved AS (UPDATE inventory SET quantity = 0, writer_epoch = (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ WITH moved AS (UPDATE inventory SET quantity = 0, writer_epoch = (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) WHERE (sku = $1) AND (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) IS NOT NULL RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved

