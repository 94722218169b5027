DELETE FROM inventory AS i USING staging s WHERE i.sku = s.sku AND s.gone RETURNING i.sku
---- sent ----
/*sqlfence fenced: inventory*/ DELETE FROM inventory AS i USING staging s WHERE (i.sku = s.sku AND s.gone) AND i.writer_epoch OPERATOR(pg_catalog.<) $1::bigint RETURNING i.sku
