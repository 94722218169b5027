-- Class 3 continued: routines the server runs for a statement without its text naming
-- them — a column default, a generated column, a CHECK constraint, an index or
-- partition-key expression, a trigger's WHEN condition on the table written; a view's
-- query on the relation read; a domain's check and a cast's function on a value
-- converted. Each calls a routine that writes inventory. sqlfence reads them from the
-- catalog (pg_depend) and judges them as the call written out (catalog_bound.go): with
-- no guard they are refused; with the guard in force the write is carried and fenced.
-- The writer adds 1 to every quantity, so each call shows in the data; it names
-- public.inventory because PostgreSQL 17 runs index builds and other maintenance with
-- search_path = pg_catalog, pg_temp.
--
-- Format: see the comment at the top of attack_test.go.

--! name: bound-column-default
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE gen (k int, g int GENERATED ALWAYS AS (public.bi(k)) STORED);
--! exec
INSERT INTO gen (k) VALUES (1)

--! name: bound-check-constraint
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ADD CONSTRAINT staging_ok CHECK (public.bw() > 0) NOT VALID;
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! exec
UPDATE staging SET n = 'u' WHERE sku = 'a'

--! name: bound-index-expression
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE idx (k int);
CREATE INDEX idx_k ON idx ((public.bi(k)));
--! exec
INSERT INTO idx VALUES (1)

--! name: bound-partition-key
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER staging_when BEFORE INSERT ON staging FOR EACH ROW WHEN (public.bw() > 0) EXECUTE FUNCTION public.noop();
--! exec
INSERT INTO staging (sku) VALUES ('x')

--! name: bound-view-query
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
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

--! name: bound-domain-held
--! class: indirect-write
--! policy: catalog
--! note: a conversion to a type runs the domains it holds: a domain over the domain, an array of it, a composite or a table's row type with a field of it
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE DOMAIN checked AS int CHECK (public.bw() > 0);
CREATE DOMAIN outer_d AS checked;
CREATE TYPE pair AS (a checked, b int);
CREATE TABLE dom (d checked);
CREATE FUNCTION public.takes_outer(outer_d) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;
CREATE FUNCTION public.ret_outer() RETURNS outer_d LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION public.out_outer(OUT o outer_d) LANGUAGE sql AS $$ SELECT 1 $$;
CREATE FUNCTION public.tab_outer() RETURNS TABLE (o outer_d) LANGUAGE sql AS $$ SELECT 1 $$;
--! query
SELECT 5::outer_d
--! query
SELECT '{1}'::outer_d[]
--! query
SELECT public.takes_outer(5)
--! query
SELECT public.ret_outer()
--! query
SELECT public.out_outer()
--! query
SELECT * FROM public.tab_outer()
--! query
SELECT ROW(1, 2)::pair
--! query
SELECT '(1,2)'::pair
--! query
SELECT * FROM json_populate_record(NULL::pair, '{"a": 1}')
--! query
SELECT * FROM jsonb_populate_record(NULL::dom, '{"d": 1}')

--! name: bound-opclass-support
--! class: indirect-write
--! policy: catalog
--! note: an operator family's support routine runs for an index of that operator class, and a type's default one wherever its values are sorted or grouped; the statement names neither
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.mycmp(int, int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN btint4cmp($1, $2); END $$;
CREATE OPERATOR CLASS myops FOR TYPE int4 USING btree AS OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >, FUNCTION 1 public.mycmp(int, int);
CREATE TABLE oc (k int);
INSERT INTO oc SELECT g FROM generate_series(1, 5) g;
CREATE INDEX oc_k ON oc (k myops);
CREATE TYPE pv AS (a int);
CREATE FUNCTION public.pv_cmp(pv, pv) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN btint4cmp($1.a, $2.a); END $$;
CREATE FUNCTION public.pv_lt(pv, pv) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1.a < $2.a; END $$;
CREATE FUNCTION public.pv_le(pv, pv) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1.a <= $2.a; END $$;
CREATE FUNCTION public.pv_eq(pv, pv) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1.a = $2.a; END $$;
CREATE FUNCTION public.pv_ge(pv, pv) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1.a >= $2.a; END $$;
CREATE FUNCTION public.pv_gt(pv, pv) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1.a > $2.a; END $$;
CREATE OPERATOR public.< (LEFTARG = pv, RIGHTARG = pv, FUNCTION = public.pv_lt);
CREATE OPERATOR public.<= (LEFTARG = pv, RIGHTARG = pv, FUNCTION = public.pv_le);
CREATE OPERATOR public.= (LEFTARG = pv, RIGHTARG = pv, FUNCTION = public.pv_eq);
CREATE OPERATOR public.>= (LEFTARG = pv, RIGHTARG = pv, FUNCTION = public.pv_ge);
CREATE OPERATOR public.> (LEFTARG = pv, RIGHTARG = pv, FUNCTION = public.pv_gt);
CREATE OPERATOR CLASS pv_ops DEFAULT FOR TYPE pv USING btree AS OPERATOR 1 public.<, OPERATOR 2 public.<=, OPERATOR 3 public.=, OPERATOR 4 public.>=, OPERATOR 5 public.>, FUNCTION 1 public.pv_cmp(pv, pv);
CREATE TABLE pvs (p pv);
INSERT INTO pvs VALUES (ROW(2)), (ROW(1)), (ROW(3));
--! exec
INSERT INTO oc VALUES (3), (4)
--! query
SELECT * FROM pvs ORDER BY p
--! query
SELECT DISTINCT p FROM pvs

--! name: bound-type-support
--! class: indirect-write
--! policy: catalog
--! note: a range type's subtype_diff runs in the planner's estimate for a constant the text spells untyped; a base type's send function runs in record_send of a row holding it
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.rdiff(int, int) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1 - $2; END $$;
CREATE TYPE myrange AS RANGE (subtype = int, subtype_diff = public.rdiff);
CREATE TABLE rt (r myrange);
INSERT INTO rt SELECT myrange(g, g + 3) FROM generate_series(1, 200) g;
ANALYZE rt;
CREATE TYPE mb;
CREATE FUNCTION public.mb_in(cstring) RETURNS mb LANGUAGE internal IMMUTABLE STRICT AS 'int4in';
CREATE FUNCTION public.mb_out(mb) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'int4out';
CREATE TYPE mb (INPUT = public.mb_in, OUTPUT = public.mb_out, INTERNALLENGTH = 4, PASSEDBYVALUE, ALIGNMENT = int4);
CREATE FUNCTION public.mb_send(mb) RETURNS bytea LANGUAGE plpgsql IMMUTABLE STRICT AS $$ BEGIN PERFORM public.bw(); RETURN '\x00000001'::bytea; END $$;
ALTER TYPE mb SET (SEND = public.mb_send);
CREATE TABLE mbt (v mb);
INSERT INTO mbt VALUES ('5');
--! query
SELECT count(*) FROM rt WHERE r && '[5,10)'
--! query
SELECT count(*) FROM rt WHERE r << '[5,10)'
--! query
SELECT record_send(ROW(v)) FROM mbt
--! query
SELECT array_send(ARRAY[v]) FROM mbt

--! name: bound-event-trigger
--! class: indirect-write
--! policy: catalog-ddl
--! noguard: the setup's event trigger writes inventory on every DDL statement, so the guard's own install (DDL, no epoch) is refused by the guard's first trigger
--! note: under ddl: allow, any DDL statement fires the event triggers a migration created
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.on_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM public.bw(); END $$;
CREATE EVENT TRIGGER adv_et ON ddl_command_end EXECUTE FUNCTION public.on_ddl();
--! exec
CREATE TABLE zz (a int)
--! exec
CREATE INDEX zz_a ON staging (q)

--! name: bound-ddl-rebuild
--! class: indirect-write
--! policy: catalog-ddl
--! note: under ddl: allow, rebuilding or re-checking stored rows runs their index expressions and constraints
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE idx (k int);
INSERT INTO idx VALUES (1), (2);
CREATE INDEX idx_k ON idx ((public.bi(k)));
ALTER TABLE staging ADD CONSTRAINT staging_ok CHECK (public.bw() > 0) NOT VALID;
--! exec
ANALYZE idx
--! exec
VACUUM FULL idx
--! exec
CLUSTER idx USING idx_k
--! exec
REINDEX TABLE idx
--! exec
ALTER TABLE idx ADD COLUMN z float8 DEFAULT random()
--! exec
ALTER TABLE staging VALIDATE CONSTRAINT staging_ok

--! name: bound-cast-held
--! class: indirect-write
--! policy: catalog
--! note: a conversion to a domain over the cast's target, or to an array domain of it, runs the cast
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE TYPE boxed AS (a int);
CREATE FUNCTION public.to_boxed(int) RETURNS boxed LANGUAGE plpgsql AS $$ BEGIN PERFORM public.bw(); RETURN ROW($1); END $$;
CREATE CAST (int AS boxed) WITH FUNCTION public.to_boxed(int);
CREATE DOMAIN dboxed AS boxed;
CREATE DOMAIN dboxarr AS boxed[];
--! query
SELECT 5::dboxed
--! query
SELECT ARRAY[5]::dboxarr

--! name: bound-statistics-expression
--! class: indirect-write
--! policy: catalog-ddl
--! note: ANALYZE evaluates an extended statistics object's expressions (as autovacuum's does, outside any statement: the guard's part)
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE st (k int, j int);
INSERT INTO st SELECT g, g FROM generate_series(1, 10) g;
CREATE STATISTICS st_x ON (public.bi(k)), j FROM st;
--! exec
ANALYZE st
--! exec
ANALYZE

--! name: bound-planner-folds-index
--! class: indirect-write
--! policy: catalog
--! note: planning a read folds the IMMUTABLE calls with constant arguments of the table's index expressions (at relcache load)
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE ifr (k int);
CREATE INDEX ifr_k ON ifr ((k + public.bi(5)));
--! query
SELECT * FROM ifr WHERE k = 1

--! name: bound-planner-folds-predicate
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE ipr (k int);
CREATE INDEX ipr_k ON ipr (k) WHERE k > public.bi(5);
--! query
SELECT * FROM ipr WHERE k = 1

--! name: bound-planner-folds-partition-key
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE pkr (k int) PARTITION BY RANGE ((k + public.bi(5)));
CREATE TABLE pkr_all PARTITION OF pkr FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
--! query
SELECT * FROM pkr WHERE k = 1

--! name: bound-planner-folds-check
--! class: indirect-write
--! policy: catalog
--! note: constraint exclusion folds a child's CHECK constraint when a read of the parent is planned
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE cpar (k int);
CREATE TABLE ckid (CONSTRAINT ckid_ok CHECK (k > public.bi(5) - 100)) INHERITS (cpar);
--! query
SELECT * FROM cpar WHERE k = 1

--! name: bound-planner-folds-statistics
--! class: indirect-write
--! policy: catalog
--! note: planning a read folds an extended statistics object's expressions
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.bi(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM public.bw(); RETURN $1; END $$;
CREATE TABLE sfr (k int, j int);
CREATE STATISTICS sfr_x ON (k + public.bi(5)), j FROM sfr;
--! query
SELECT * FROM sfr WHERE k = 1

--! name: bound-routine-in-sqlfence-schema
--! class: indirect-write
--! policy: catalog
--! note: a migration can create a schema named sqlfence (no guard installed) and put the routine there; only the guard's own event triggers are left out
--! setup
CREATE SCHEMA IF NOT EXISTS sqlfence;
CREATE FUNCTION sqlfence.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT sqlfence.bw();
CREATE VIEW bumps AS SELECT sqlfence.bw() AS x;
--! exec
INSERT INTO staging (sku) VALUES ('x')
--! query
SELECT * FROM bumps

--! name: bound-argument-default
--! class: indirect-write
--! policy: catalog
--! note: a call that leaves an argument out runs the argument's default, stored with the routine, not in its body
--! setup
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE public.inventory SET quantity = quantity + 1; RETURN 1; END $$;
CREATE FUNCTION public.f(a int DEFAULT public.bw()) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;
CREATE PROCEDURE public.pr(a int DEFAULT public.bw()) LANGUAGE sql AS $$ SELECT 1 $$;
--! query
SELECT public.f()
--! exec
CALL public.pr()
