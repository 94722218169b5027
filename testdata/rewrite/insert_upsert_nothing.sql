INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT DO NOTHING
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ($1, $2, $3::bigint) ON CONFLICT DO NOTHING
