-- A maintenance script: each statement below writes a protected table.

-- Fenced by hand: assigns the epoch and compares it, with the claim's epoch.
UPDATE inventory i
   SET quantity = 0, writer_epoch = j.lease_epoch
  FROM jobs j
 WHERE j.id = 42 AND i.sku = 'widget' AND i.writer_epoch < j.lease_epoch;
DELETE FROM inventory WHERE sku = 'bolt' AND writer_epoch < 7;
UPDATE billing.invoices SET total = 0, writer_epoch = 9 WHERE id = 1 AND writer_epoch <= 9;
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('nut', 1, 9)
    ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity, writer_epoch = excluded.writer_epoch
    WHERE inventory.writer_epoch < excluded.writer_epoch;

-- Not fenced:
UPDATE inventory SET quantity = 0 WHERE sku = 'widget';
    DELETE FROM inventory;
UPDATE inventory SET quantity = 1, writer_epoch = 9 WHERE sku = 'nut' AND writer_epoch <= 9;
UPDATE inventory SET quantity = 1, writer_epoch = 9 WHERE sku = 'nut' OR writer_epoch < 9;
INSERT INTO inventory (sku, quantity) VALUES ('washer', 3);
INSERT INTO inventory VALUES ('washer', 3, 0);
WITH gone AS (DELETE FROM inventory WHERE quantity = 0 RETURNING sku) SELECT count(*) FROM gone;
MERGE INTO inventory i USING (VALUES ('nut', 2)) AS s(sku, q) ON i.sku = s.sku
    WHEN MATCHED THEN UPDATE SET quantity = s.q;
TRUNCATE inventory;
COPY inventory (sku, quantity) FROM stdin;
SELECT billing.recalc(1);
-- Ünïcödé in a comment does not shift the columns of what follows.
/* ü */ UPDATE billing.invoices SET total = 1;
