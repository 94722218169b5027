DO $$ DECLARE n int; BEGIN SELECT count(*) INTO n FROM inventory; RAISE NOTICE '%', n; INSERT INTO audit (sku) VALUES ('x'); END $$
---- sent ----
PASS
