SELECT 'UPDATE inventory SET quantity = 0' AS text
---- sent ----
PASS
