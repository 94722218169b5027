WITH c AS (UPDATE jobs SET lease_epoch = lease_epoch + 1 WHERE id = 1 RETURNING id) UPDATE inventory SET quantity = 0 WHERE sku IN (SELECT 'a' FROM c)
---- sent ----
REFUSED: sqlfence: refused [SF602]: table inventory: the statement writes both a protected table and the claim table jobs; claim the job first with the claim helpers, then write under the claim's epoch
