INSERT INTO inventory (sku, quantity) SELECT sku, sum(q) FROM staging GROUP BY sku

---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, sum(q), (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) FROM staging GROUP BY sku

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, sum(q), (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) FROM staging GROUP BY sku

