MERGE INTO inventory AS t USING staging AS s ON t.sku = s.sku
WHEN MATCHED AND s.gone THEN DELETE
WHEN MATCHED AND s.q = 0 THEN DO NOTHING
WHEN MATCHED THEN UPDATE SET quantity = s.q, note = s.n
WHEN NOT MATCHED AND s.q > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)

---- sent ----
/*sqlfence fenced: inventory*/ MERGE INTO inventory AS t USING staging AS s ON t.sku = s.sku
WHEN MATCHED AND (s.gone) AND t.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) THEN DELETE
WHEN MATCHED AND (s.q = 0) AND t.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) THEN DO NOTHING
WHEN MATCHED AND t.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) THEN UPDATE SET quantity = s.q, note = s.n, writer_epoch = (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE)
WHEN NOT MATCHED AND s.q > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE))

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ MERGE INTO inventory AS t USING staging AS s ON t.sku = s.sku
WHEN MATCHED AND (s.gone) AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL THEN DELETE
WHEN MATCHED AND (s.q = 0) AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL THEN DO NOTHING
WHEN MATCHED AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL THEN UPDATE SET quantity = s.q, note = s.n, writer_epoch = (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE)
WHEN NOT MATCHED AND s.q > 100 THEN DO NOTHING
WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE))

