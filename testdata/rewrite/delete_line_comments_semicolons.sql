-- leading
DELETE -- x
FROM -- y
inventory -- z
WHERE -- w
sku = $1 -- v
;;
---- sent ----
/*sqlfence fenced: inventory*/ -- leading
DELETE -- x
FROM -- y
inventory -- z
WHERE -- w
(sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint -- v
;;
