WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) UPDATE billing.invoices SET total = total + (SELECT sum(n) FROM r) WHERE id = $1
---- sent ----
/*sqlfence fenced: invoices*/ WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) UPDATE billing.invoices SET total = total + (SELECT sum(n) FROM r), writer_epoch = $2::bigint WHERE (id = $1) AND invoices.writer_epoch OPERATOR(pg_catalog.<=) $2::bigint
