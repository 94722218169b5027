DELETE FROM inventory AS i USING staging s WHERE i.sku = s.sku AND s.gone RETURNING i.sku

---- sent ----
/*sqlfence fenced: inventory*/ DELETE FROM inventory AS i USING staging s WHERE (i.sku = s.sku AND s.gone) AND i.writer_epoch OPERATOR(pg_catalog.<) (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) RETURNING i.sku

---- sent, stale: claim ----
/*sqlfence fenced: inventory*/ DELETE FROM inventory AS i USING staging s WHERE (i.sku = s.sku AND s.gone) AND (SELECT $1::bigint FROM jobs sqlfence_claim WHERE sqlfence_claim.id OPERATOR(pg_catalog.=) $2 AND sqlfence_claim.lease_epoch OPERATOR(pg_catalog.=) $1::bigint FOR KEY SHARE) IS NOT NULL RETURNING i.sku

