EXPLAIN (ANALYZE false) DELETE FROM inventory
---- sent ----
PASS
