-- Operator repairs, run by hand with psql.

-- sqlfence:ignore one-off recount after INC-1234, run with the guard override
UPDATE inventory SET quantity = 12 WHERE sku = 'widget';

SELECT count(*) FROM inventory;

-- Invoices are rebuilt from the ledger; this empties them first
-- (and is what sqlfence check reports).
TRUNCATE billing.invoices;
