-- A repair run under the guard's operator override: the reason is given in the
-- transaction itself, and every statement of it is logged by the guard.
BEGIN;
SELECT sqlfence.override('recount after INC-1234');
UPDATE inventory SET quantity = 12 WHERE sku = 'widget';
DELETE FROM inventory WHERE sku = 'bolt';
COMMIT;
-- The override ended with the transaction.
DELETE FROM inventory WHERE sku = 'nut';
SELECT sqlfence.override('short');
DELETE FROM inventory WHERE sku = 'nut';
