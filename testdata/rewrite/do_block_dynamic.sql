DO $$ BEGIN EXECUTE 'DELETE FROM inventory'; END $$
---- sent ----
REFUSED: sqlfence: refused: table inventory: a DO block builds SQL text that names a protected table (dynamic EXECUTE cannot be fenced); run the write as a plain statement under sqlfence.WithEpoch
