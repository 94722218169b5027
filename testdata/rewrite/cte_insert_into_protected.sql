WITH src AS (SELECT sku, q FROM staging) INSERT INTO inventory (sku, quantity) SELECT sku, q FROM src
---- sent ----
/*sqlfence fenced: inventory*/ WITH src AS (SELECT sku, q FROM staging) INSERT INTO inventory (sku, quantity, writer_epoch) SELECT sku, q, $1::bigint FROM src
