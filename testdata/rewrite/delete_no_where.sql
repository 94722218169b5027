DELETE FROM inventory
---- sent ----
DELETE FROM inventory WHERE inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint
