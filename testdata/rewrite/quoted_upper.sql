UPDATE "INVENTORY" SET quantity = 1
---- sent ----
PASS
