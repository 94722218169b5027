PREPARE p AS UPDATE inventory SET quantity = $1
---- sent ----
REFUSED: sqlfence: refused [SF406]: SQL-level PREPARE and EXECUTE are not run on a fenced connection: EXECUTE runs a statement sqlfence cannot see, with parameters it does not bind; prepare through database/sql (db.PrepareContext); drivers prepare at the protocol level, where sqlfence fences the statement
