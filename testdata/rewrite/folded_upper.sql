UPDATE INVENTORY SET quantity = 1
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE INVENTORY SET quantity = 1, writer_epoch = $1::bigint WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint
