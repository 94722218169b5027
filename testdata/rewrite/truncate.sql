TRUNCATE inventory
---- sent ----
REFUSED: sqlfence: refused [SF301]: table inventory: TRUNCATE cannot be fenced; delete the rows with DELETE under an epoch, or truncate outside the driver with the guard's operator override
