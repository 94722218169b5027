UPDATE inventory i SET quantity = s.q FROM staging s WHERE i.sku = s.sku RETURNING i.sku, i.quantity

---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory i SET quantity = s.q, writer_epoch = (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) FROM staging s WHERE (i.sku = s.sku) AND i.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) RETURNING i.sku, i.quantity

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ UPDATE inventory i SET quantity = s.q, writer_epoch = (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) FROM staging s WHERE (i.sku = s.sku) AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL RETURNING i.sku, i.quantity

