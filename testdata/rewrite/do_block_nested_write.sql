DO $$ BEGIN IF (SELECT count(*) FROM staging) > 0 THEN UPDATE inventory SET quantity = 0; END IF; END $$
---- sent ----
REFUSED: sqlfence: refused [SF416]: table inventory: a DO block writes the protected table, and no epoch reaches inside it; run the write as a plain statement under sqlfence.WithEpoch
