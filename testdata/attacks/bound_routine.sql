-- Class 3 continued: routines the server runs for a statement without its text naming
-- them — a column default, a generated column, a CHECK constraint, an index or
-- partition-key expression, a trigger's WHEN condition on the table written; a view's
-- query on the relation read; a domain's check and a cast's function on a value
-- converted. Each calls a routine that writes inventory. sqlfence reads them from the
-- catalog (pg_depend) and judges them as the call written out (catalog_bound.go): with
-- no guard they are refused; with the guard in force the write is carried and fenced.
-- The writer adds 1 to every quantity, so each call shows in the data.
--
-- Format: see the comment at the top of attack_test.go.

--! name: bound-column-default
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.bw();
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! exec
INSERT INTO staging DEFAULT VALUES
--! exec
INSERT INTO staging VALUES ('y', DEFAULT)
--! exec
INSERT INTO staging (sku) SELECT 'z'
--! exec
UPDATE staging SET q = DEFAULT WHERE sku = 'a'
--! exec
MERGE INTO staging s USING (SELECT 'm' AS sku) v ON s.sku = v.sku WHEN NOT MATCHED THEN INSERT (sku) VALUES (v.sku)
--! exec
WITH w AS (INSERT INTO public.staging (sku) VALUES ('w') RETURNING 1) SELECT count(*) FROM w

--! name: bound-column-default-reached
--! class: indirect-write
--! policy: catalog
--! note: the write to staging comes through an updatable view and through a function body
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.bw();
CREATE VIEW staging_v AS SELECT sku, q FROM staging;
CREATE FUNCTION public.add_staging(text) RETURNS void LANGUAGE sql AS $$ INSERT INTO staging (sku) VALUES ($1) $$;
--! exec
INSERT INTO staging_v (sku) VALUES ('v')
--! exec
SELECT public.add_staging('f')

--! name: bound-generated-column
--! class: indirect-write
--! policy: catalog
--! note: an IMMUTABLE function cannot write, but the VOLATILE one it calls can
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE gen (k int, g int GENERATED ALWAYS AS (public.bi(k)) STORED);
--! exec
INSERT INTO gen (k) VALUES (1)

--! name: bound-check-constraint
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ADD CONSTRAINT staging_ok CHECK (public.bw() > 0) NOT VALID;
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! exec
UPDATE staging SET n = 'u' WHERE sku = 'a'

--! name: bound-index-expression
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE idx (k int);
CREATE INDEX idx_k ON idx ((public.bi(k)));
--! exec
INSERT INTO idx VALUES (1)

--! name: bound-partition-key
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE parted (k int) PARTITION BY RANGE (public.bi(k));
CREATE TABLE parted_all PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
--! exec
INSERT INTO parted VALUES (1)

--! name: bound-trigger-condition
--! class: indirect-write
--! policy: catalog
--! note: the trigger's own function writes nothing; its WHEN condition does
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER staging_when BEFORE INSERT ON staging FOR EACH ROW WHEN (public.bw() > 0) EXECUTE FUNCTION public.noop();
--! exec
INSERT INTO staging (sku) VALUES ('x')

--! name: bound-view-query
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE VIEW bumps AS SELECT public.bw() AS x;
CREATE VIEW bumps_too AS SELECT * FROM bumps;
CREATE FUNCTION public.read_bumps() RETURNS int LANGUAGE sql STABLE AS $$ SELECT x FROM bumps $$;
--! query
SELECT * FROM bumps
--! query
SELECT x FROM public."bumps"
--! query
SELECT * FROM bumps_too
--! query
WITH w AS (SELECT * FROM bumps) SELECT * FROM w
--! query
SELECT (SELECT x FROM bumps) + 1
--! query
SELECT public.read_bumps()

--! name: bound-domain-column
--! class: indirect-write
--! policy: catalog
--! note: a domain's CHECK runs for NULL too, and through an array's elements and a composite's fields
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE DOMAIN checked AS int CHECK (public.bw() > 0);
CREATE TYPE pair AS (a checked, b int);
CREATE TABLE dom (d checked);
CREATE TABLE dom_array (d checked[]);
CREATE TABLE dom_pair (p pair);
--! exec
INSERT INTO dom DEFAULT VALUES
--! exec
INSERT INTO dom_array VALUES (ARRAY[1])
--! exec
INSERT INTO dom_pair VALUES (ROW(1, 2))

--! name: bound-domain-conversion
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE DOMAIN checked AS int CHECK (public.bw() > 0);
CREATE FUNCTION public.takes_checked(checked) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;
CREATE FUNCTION public.holds_checked() RETURNS int LANGUAGE plpgsql AS $$ DECLARE v checked := 1; BEGIN RETURN 1; END $$;
--! query
SELECT 5::checked
--! query
SELECT CAST(5 AS public.checked)
--! query
SELECT checked '5'
--! query
SELECT public.takes_checked(5)
--! query
SELECT public.holds_checked()

--! name: bound-cast-function
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE TYPE boxed AS (a int);
CREATE FUNCTION public.to_boxed(int) RETURNS boxed LANGUAGE plpgsql AS $$ BEGIN PERFORM public.bw(); RETURN ROW($1); END $$;
CREATE CAST (int AS boxed) WITH FUNCTION public.to_boxed(int);
--! query
SELECT 5::boxed
--! query
SELECT CAST(5 AS boxed)

--! name: bound-cast-assignment
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE TYPE boxed AS (a int);
CREATE FUNCTION public.to_boxed(int) RETURNS boxed LANGUAGE plpgsql AS $$ BEGIN PERFORM public.bw(); RETURN ROW($1); END $$;
CREATE CAST (int AS boxed) WITH FUNCTION public.to_boxed(int) AS ASSIGNMENT;
CREATE TABLE boxes (b boxed);
--! exec
INSERT INTO boxes VALUES (5)

--! name: bound-cast-implicit
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE TYPE boxed AS (a int);
CREATE FUNCTION public.to_boxed(int) RETURNS boxed LANGUAGE plpgsql AS $$ BEGIN PERFORM public.bw(); RETURN ROW($1); END $$;
CREATE CAST (int AS boxed) WITH FUNCTION public.to_boxed(int) AS IMPLICIT;
CREATE FUNCTION public.unbox(boxed) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT ($1).a $$;
--! query
SELECT public.unbox(5)

--! name: bound-default-guard-carries
--! class: indirect-write
--! policy: catalog
--! afterconnect: SET sqlfence.fenced = on
--! note: with the guard in force the default's write is carried: fenced with the statement's epoch
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.bw();
CREATE VIEW bumps AS SELECT public.bw() AS x;
--! guard
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! query
SELECT * FROM bumps

--! name: bound-default-guard-disabled
--! class: indirect-write
--! policy: catalog
--! afterconnect: SET sqlfence.fenced = on
--! note: another session switches the guard off on inventory and adds the default, a view and a cast after the connector read the catalog
--! setup
--! guard
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! other
ALTER TABLE inventory DISABLE TRIGGER USER;
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.bw();
CREATE VIEW bumps AS SELECT public.bw() AS x;
CREATE TYPE boxed AS (a int);
CREATE FUNCTION public.to_boxed(int) RETURNS boxed LANGUAGE plpgsql AS $$ BEGIN PERFORM public.bw(); RETURN ROW($1); END $$;
CREATE CAST (int AS boxed) WITH FUNCTION public.to_boxed(int)
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! query
SELECT * FROM bumps
--! query
SELECT 5::boxed

--! name: bound-explain-folds
--! class: indirect-write
--! policy: catalog
--! note: EXPLAIN without ANALYZE runs nothing, but the planner evaluates IMMUTABLE calls with constant arguments and inlines SQL functions
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE FUNCTION public.bs(int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT public.bw() + $1 $$;
CREATE TABLE folded (k int DEFAULT public.bi(5));
--! exec
EXPLAIN SELECT public.bi(1)
--! exec
EXPLAIN SELECT public.bs(1)
--! exec
EXPLAIN SELECT * FROM staging WHERE q = public.bi(2)
--! exec
EXPLAIN (COSTS OFF) INSERT INTO folded DEFAULT VALUES
