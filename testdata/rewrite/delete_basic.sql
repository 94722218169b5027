DELETE FROM inventory WHERE sku = $1
---- sent ----
DELETE FROM inventory WHERE (sku = $1) AND inventory.writer_epoch < $2::bigint
