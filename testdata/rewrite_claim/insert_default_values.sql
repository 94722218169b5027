INSERT INTO reports DEFAULT VALUES RETURNING id

---- sent ----
/*sqlfence fenced: reports*/ INSERT INTO reports (fence_epoch) VALUES ((SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE)) RETURNING id

---- sent, stale: claim ----
/*sqlfence fenced: reports*/ INSERT INTO reports (fence_epoch) VALUES ((SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE)) RETURNING id

