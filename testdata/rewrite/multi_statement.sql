SELECT 1; UPDATE inventory SET quantity = 1
---- sent ----
REFUSED: sqlfence: refused [SF306]: table inventory: a string of 2 statements writes a protected table; send each statement on its own so each can be fenced
