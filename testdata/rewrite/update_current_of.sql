UPDATE inventory SET quantity = 1 WHERE CURRENT OF c
---- sent ----
REFUSED: sqlfence: refused [SF305]: table inventory: UPDATE … WHERE CURRENT OF cannot carry the fence predicate; update by key (WHERE id = $1) instead of through a cursor
