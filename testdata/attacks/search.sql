-- Cases the search with the server as the oracle (search_test.go) found, kept as
-- regression cases. Each is the composition the search printed, reduced to what it
-- takes.
--
-- Format: see the comment at the top of attack_test.go.

--! name: search-sql-writer-in-subquery
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.srch_sw(int) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = quantity + 3 RETURNING 1 $$;
--! exec
SELECT * FROM (SELECT srch_sw(1)) x

--! name: search-sql-writer-plain
--! class: indirect-write
--! policy: catalog
--! setup
CREATE FUNCTION public.srch_sw(int) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = quantity + 3 RETURNING 1 $$;
--! exec
SELECT srch_sw(1)

--! name: search-rule-then-sql-writer
--! class: indirect-write
--! policy: catalog
--! setup
CREATE RULE srch_r AS ON INSERT TO audit DO ALSO UPDATE inventory SET quantity = 0;
CREATE FUNCTION public.srch_sw(int) RETURNS int LANGUAGE sql AS $$ UPDATE inventory SET quantity = quantity + 3 RETURNING 1 $$;
--! exec
INSERT INTO audit VALUES ('r')
--! exec
SELECT * FROM (SELECT srch_sw(1)) x

-- The session search (search_session_test.go) found these with the fixes of issue 33
-- reverted: a reset in a pgx batch returning standard_conforming_strings to a
-- database or role default of off that AfterConnect had covered with a SET, before a
-- text that is a plain read with it on and an unfenced write with it off (exec
-- modes that parse each statement as it runs); and a query rewriter whose returned
-- arguments begin with another rewriter, which pgx took for one of its options.

--! name: search-session-reset-database-default-batch
--! class: text-reading
--! mode: describe_exec
--! afterconnect: SET standard_conforming_strings = on
--! setup
ALTER DATABASE ${db} SET standard_conforming_strings = off;
--! batch
RESET standard_conforming_strings
;;
WITH a AS (SELECT 'x\', ' AS s), u AS (DELETE FROM inventory RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a

--! name: search-session-set-default-role-default-batch
--! class: text-reading
--! mode: describe_exec
--! afterconnect: SET standard_conforming_strings = on
--! setup
ALTER ROLE ${user} IN DATABASE ${db} SET standard_conforming_strings = off;
--! batch
SET SESSION standard_conforming_strings TO DEFAULT
;;
WITH a AS (SELECT 'x\', ' AS s), u AS (UPDATE inventory SET quantity = 0 RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a

--! name: search-session-reset-after-read-batch
--! class: text-reading
--! mode: cache_describe
--! afterconnect: SET standard_conforming_strings = on
--! setup
ALTER ROLE ${user} IN DATABASE ${db} SET standard_conforming_strings = off;
--! batch
SELECT 1
;;
RESET standard_conforming_strings
;;
WITH a AS (SELECT 'x\', ' AS s), u AS (DELETE FROM inventory RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a

--! name: search-session-reset-all-exec-batch
--! class: text-reading
--! mode: exec
--! afterconnect: SET standard_conforming_strings = on
--! setup
ALTER DATABASE ${db} SET standard_conforming_strings = off;
--! batch
RESET ALL
;;
WITH a AS (SELECT 'x\', ' AS s), u AS (UPDATE inventory SET quantity = 0 RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a

--! name: search-rewriter-returns-rewriter
--! class: fence-meaning
--! mode: cache_statement
--! exec rewrite rwargs=rw,exec,cache_describe args=["x'); DELETE FROM inventory; --"]
SELECT $1::text
--! to
WITH u AS (UPDATE inventory SET quantity = 1 RETURNING 1) SELECT count(*) FROM u

--! name: search-4711-363
--! class: ddl
--! policy: catalog
--! afterconnect: SET sqlfence.fenced = on
--! note: the guard switched off on inventory, then a column default that writes it; the INSERT was decided before the DDL
--! setup
--! guard
--! exec
INSERT INTO staging DEFAULT VALUES
--! other
ALTER TABLE inventory DISABLE TRIGGER USER;
CREATE FUNCTION public.srch_d() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.srch_d()
--! exec
INSERT INTO staging DEFAULT VALUES
