DELETE FROM U&"!0069nventory" UESCAPE '!' WHERE sku = $1
---- sent ----
/*sqlfence fenced: inventory*/ DELETE FROM U&"!0069nventory" UESCAPE '!' WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint
