DELETE FROM inventory WHERE sku = $1
---- sent ----
DELETE FROM inventory WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint
