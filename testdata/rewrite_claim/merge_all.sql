MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
WHEN MATCHED AND s.q = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET quantity = s.q
WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)

---- sent ----
/*sqlfence fenced: inventory*/ MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
WHEN MATCHED AND (s.q = 0) AND i.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) THEN DELETE
WHEN MATCHED AND i.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) THEN UPDATE SET quantity = s.q, writer_epoch = (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE)
WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE))

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
WHEN MATCHED AND (s.q = 0) AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL THEN DELETE
WHEN MATCHED AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL THEN UPDATE SET quantity = s.q, writer_epoch = (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE)
WHEN NOT MATCHED THEN INSERT (sku, quantity, writer_epoch) VALUES (s.sku, s.q, (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE))

