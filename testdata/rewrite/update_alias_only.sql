UPDATE ONLY public.inventory AS i SET quantity = 0 WHERE i.sku = $1 OR i.sku = $2
---- sent ----
/*sqlfence fenced: inventory*/ UPDATE ONLY public.inventory AS i SET quantity = 0, writer_epoch = $3::bigint WHERE (i.sku = $1 OR i.sku = $2) AND i.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
