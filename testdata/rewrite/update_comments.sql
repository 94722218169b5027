/* app=worker,route=/jobs */ UPDATE inventory -- hint
  SET quantity = quantity - $2 /* trailing */
  WHERE sku = $1 AND note = 'where -- not a comment'; -- done
---- sent ----
/*sqlfence fenced: inventory*/ /* app=worker,route=/jobs */ UPDATE inventory -- hint
  SET quantity = quantity - $2, writer_epoch = $3::bigint /* trailing */
  WHERE (sku = $1 AND note = 'where -- not a comment') AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint; -- done
