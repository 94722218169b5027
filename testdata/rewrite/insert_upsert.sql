INSERT INTO inventory AS i (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = i.quantity + excluded.quantity
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory AS i (sku, quantity, writer_epoch) VALUES ($1, $2, $3::bigint) ON CONFLICT (sku) DO UPDATE SET quantity = i.quantity + excluded.quantity, writer_epoch = $3::bigint WHERE i.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
