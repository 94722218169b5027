DELETE FROM inventory
---- sent ----
DELETE FROM inventory WHERE inventory.writer_epoch < $1::bigint
