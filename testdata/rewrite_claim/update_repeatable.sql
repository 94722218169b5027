update billing.invoices set total = $1 where id = $2

---- sent ----
/*sqlfence fenced: invoices*/ update billing.invoices set total = $1, writer_epoch = (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) where (id = $2) AND invoices.writer_epoch OPERATOR(pg_catalog.<=) (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE)

---- sent, stale: claim ----
/*sqlfence fenced: invoices*/ update billing.invoices set total = $1, writer_epoch = (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) where (id = $2) AND (SELECT $3::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $4 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $3::bigint FOR KEY SHARE) IS NOT NULL

