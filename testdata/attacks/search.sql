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
