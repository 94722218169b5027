DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$
---- sent ----
REFUSED: sqlfence: refused [SF416]: table inventory: a DO block writes the protected table, and no epoch reaches inside it; run the write as a plain statement under sqlfence.WithEpoch
