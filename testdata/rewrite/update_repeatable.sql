update billing.invoices set total = $1 where id = $2
---- sent ----
/*sqlfence fenced: invoices*/ update billing.invoices set total = $1, writer_epoch = $3::bigint where (id = $2) AND invoices.writer_epoch OPERATOR(pg_catalog.<=) $3::bigint
