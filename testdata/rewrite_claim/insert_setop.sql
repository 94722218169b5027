INSERT INTO inventory (sku, quantity) SELECT sku, q FROM staging UNION ALL SELECT $1, $2 ORDER BY 1

---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, q, (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) FROM staging UNION ALL SELECT $1, $2, (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) ORDER BY 1

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, q, (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) FROM staging UNION ALL SELECT $1, $2, (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) ORDER BY 1

