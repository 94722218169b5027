DELETE FROM inventory
---- sent ----
/*sqlfence fenced: inventory*/ DELETE FROM inventory WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint
