INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity WHERE inventory.quantity < excluded.quantity OR inventory.quantity IS NULL RETURNING quantity
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ($1, $2, $3::bigint) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity, writer_epoch = $3::bigint WHERE (inventory.quantity < excluded.quantity OR inventory.quantity IS NULL) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint RETURNING quantity
