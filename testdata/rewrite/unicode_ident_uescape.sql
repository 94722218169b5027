DELETE FROM U&"!0069nventory" UESCAPE '!' WHERE sku = $1
---- sent ----
DELETE FROM U&"!0069nventory" UESCAPE '!' WHERE (sku = $1) AND inventory.writer_epoch < $2::bigint
