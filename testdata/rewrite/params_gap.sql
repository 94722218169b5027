UPDATE inventory SET quantity = $3 WHERE sku = $1
---- sent ----
UPDATE inventory SET quantity = $3, writer_epoch = $4::bigint WHERE (sku = $1) AND inventory.writer_epoch < $4::bigint
