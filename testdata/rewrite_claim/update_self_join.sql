UPDATE inventory SET quantity = t2.quantity + 1 FROM inventory AS t2 WHERE inventory.sku = t2.sku AND t2.sku = $1

---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = t2.quantity + 1, writer_epoch = (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) FROM inventory AS t2 WHERE (inventory.sku = t2.sku AND t2.sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE)

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = t2.quantity + 1, writer_epoch = (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) FROM inventory AS t2 WHERE (inventory.sku = t2.sku AND t2.sku = $1) AND (SELECT $2::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $3 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $2::bigint FOR KEY SHARE) IS NOT NULL

