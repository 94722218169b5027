DO $$ BEGIN EXECUTE 'DELETE FROM inventory'; END $$
---- sent ----
REFUSED: sqlfence: refused [SF415]: a DO block runs dynamic SQL (EXECUTE), which sqlfence cannot read; write the statements out in the body, or run them as plain statements through the driver
