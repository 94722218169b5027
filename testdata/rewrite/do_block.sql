DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$
---- sent ----
REFUSED: sqlfence: refused: table inventory: a DO block that mentions a protected table cannot be fenced; run the writes as plain statements under an epoch
