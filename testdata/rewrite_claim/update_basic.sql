UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1

---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = quantity - $2, writer_epoch = (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE)

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = quantity - $2, writer_epoch = (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) WHERE (sku = $1) AND (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) IS NOT NULL

