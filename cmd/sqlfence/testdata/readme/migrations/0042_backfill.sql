-- Backfill the reserved counts.
UPDATE inventory SET reserved = 0 WHERE reserved IS NULL;
-- Fenced by hand: the backfill of the new column carries the epoch.
UPDATE inventory SET quantity = quantity, writer_epoch = 9 WHERE sku = 'a' AND writer_epoch < 9;
