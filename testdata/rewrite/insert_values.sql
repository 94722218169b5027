INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, (($4 + 1))), ('x', DEFAULT)
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ($1, $2, $5::bigint), ($3, (($4 + 1)), $5::bigint), ('x', DEFAULT, $5::bigint)
