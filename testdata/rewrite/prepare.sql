PREPARE p AS UPDATE inventory SET quantity = $1
---- sent ----
REFUSED: sqlfence: refused: table inventory: PREPARE … AS a write to a protected table cannot bind an epoch at EXECUTE; prepare through database/sql (db.PrepareContext): sqlfence fences prepared statements itself
