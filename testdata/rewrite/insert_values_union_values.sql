INSERT INTO inventory (sku, quantity) VALUES ('a', 1) UNION ALL VALUES ('b', 2)
---- sent ----
/*sqlfence fenced: inventory*/ INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 1, $1::bigint) UNION ALL VALUES ('b', 2, $1::bigint)
