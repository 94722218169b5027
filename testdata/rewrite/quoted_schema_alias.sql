UPDATE "billing"."invoices" AS "Inv" SET total = 1 WHERE "Inv".id = $1
---- sent ----
/*sqlfence fenced: invoices*/ UPDATE "billing"."invoices" AS "Inv" SET total = 1, writer_epoch = $2::bigint WHERE ("Inv".id = $1) AND "Inv".writer_epoch OPERATOR(pg_catalog.<=) $2::bigint
