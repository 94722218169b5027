INSERT INTO inventory (sku, quantity) SELECT sku, sum(q) FROM staging GROUP BY sku
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, sum(q), $1::bigint FROM staging GROUP BY sku
