UPDATE inventory i SET quantity = s.q FROM staging s WHERE i.sku = s.sku RETURNING i.sku, i.quantity
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE inventory i SET quantity = s.q, writer_epoch = $1::bigint FROM staging s WHERE (i.sku = s.sku) AND i.writer_epoch OPERATOR(pg_catalog.<) $1::bigint RETURNING i.sku, i.quantity
