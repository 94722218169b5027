EXPLAIN (ANALYZE, BUFFERS) UPDATE inventory SET quantity = 1 WHERE sku = $1

---- sent ----
/*sqlfence fenced: inventory*/ EXPLAIN (ANALYZE, BUFFERS) UPDATE inventory SET quantity = 1, writer_epoch = (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE)

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ EXPLAIN (ANALYZE, BUFFERS) UPDATE inventory SET quantity = 1, writer_epoch = (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) WHERE (sku = $1) AND (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) IS NOT NULL

