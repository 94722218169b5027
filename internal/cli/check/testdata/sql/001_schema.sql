-- A migration that creates the protected tables and seeds them the fenced way.
CREATE TABLE inventory (
    sku          text PRIMARY KEY,
    quantity     int NOT NULL,
    writer_epoch bigint NOT NULL DEFAULT 0
);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int PRIMARY KEY, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);

-- Seed rows name the epoch column: epoch 0, before any claim.
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('widget', 10, 0), ('bolt', 5, 0);

-- Reads and writes of unprotected tables are none of the linter's business.
SELECT sku, quantity FROM inventory WHERE quantity < 3;
UPDATE jobs SET available_at = now() WHERE status = 'pending';
EXPLAIN UPDATE inventory SET quantity = 0;
COPY inventory TO stdout;
