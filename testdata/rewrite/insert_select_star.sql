INSERT INTO inventory (sku, quantity) SELECT * FROM staging
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) SELECT *, $1::bigint FROM staging
