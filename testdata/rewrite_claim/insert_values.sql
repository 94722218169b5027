INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, (($4 + 1))), ('x', DEFAULT)

---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ($1, $2, (SELECT $5::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $6 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $5::bigint FOR KEY SHARE)), ($3, (($4 + 1)), (SELECT $5::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $6 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $5::bigint FOR KEY SHARE)), ('x', DEFAULT, (SELECT $5::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $6 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $5::bigint FOR KEY SHARE))

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ($1, $2, (SELECT $5::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $6 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $5::bigint FOR KEY SHARE)), ($3, (($4 + 1)), (SELECT $5::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $6 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $5::bigint FOR KEY SHARE)), ('x', DEFAULT, (SELECT $5::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $6 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $5::bigint FOR KEY SHARE))

