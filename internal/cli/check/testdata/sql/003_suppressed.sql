-- sqlfence:ignore one-off repair after INC-1234, run under the guard override
UPDATE inventory SET quantity = 10 WHERE sku = 'widget';

-- sqlfence:ignore
DELETE FROM inventory WHERE sku = 'bolt';

-- sqlfence:ignore nothing to suppress here
SELECT 1;

/* sqlfence:ignore restore from the nightly dump (INC-99) */
-- second comment line between the marker and the statement
TRUNCATE billing.invoices;
