-- Extension functions pass under resolve: catalog only when every function a call may
-- reach is a reviewed extension's own C function (internal/engine/extensions.go). A
-- user function that looks like one — another schema that search_path puts first, an
-- overload, a member replaced by CREATE OR REPLACE or added with ALTER EXTENSION — is
-- judged by its body. Format: see the comment at the top of attack_test.go.

--! name: extension-lookalike-other-schema
--! class: indirect-write
--! policy: catalog
--! setup
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE SCHEMA evil;
CREATE FUNCTION evil.gen_salt(text, integer) RETURNS text LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 'x'; END $$;
--! exec
SET search_path = evil, public
--! query
SELECT gen_salt('bf', 4)
--! query
SELECT evil.gen_salt('bf', 4)

--! name: extension-lookalike-overload
--! class: indirect-write
--! policy: catalog
--! setup
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE FUNCTION public.digest(integer) RETURNS integer LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
--! query
SELECT digest(1)
--! query
SELECT public.digest(1)

--! name: extension-member-replaced
--! class: indirect-write
--! policy: catalog
--! note: CREATE OR REPLACE keeps the function a member of the extension, with a new body
--! setup
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE OR REPLACE FUNCTION public.gen_random_bytes(integer) RETURNS bytea LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN '\x00'; END $$;
--! query
SELECT gen_random_bytes(8)

--! name: extension-member-added
--! class: indirect-write
--! policy: catalog
--! note: ALTER EXTENSION … ADD makes a user function a member under a reviewed name
--! setup
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE FUNCTION public.hmac(integer) RETURNS integer LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
ALTER EXTENSION pgcrypto ADD FUNCTION public.hmac(integer);
--! query
SELECT hmac(1)

--! name: extension-lookalike-uuid-default-policy
--! class: indirect-write
--! note: without the catalog, an extension's name proves nothing
--! setup
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE SCHEMA evil;
CREATE FUNCTION evil.uuid_generate_v4() RETURNS uuid LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN gen_random_uuid(); END $$;
--! exec
SET search_path = evil, public
--! query
SELECT uuid_generate_v4()

--! name: matview-refresh-calls-writer
--! class: indirect-write
--! policy: catalog
--! note: REFRESH runs the view's query: one that calls a writer is refused
--! setup
CREATE FUNCTION public.w() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
CREATE MATERIALIZED VIEW mv AS SELECT public.w() AS x WITH NO DATA;
--! exec
REFRESH MATERIALIZED VIEW mv

--! name: matview-refresh-calls-writer-default-policy
--! class: indirect-write
--! setup
CREATE FUNCTION public.w() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
CREATE MATERIALIZED VIEW mv AS SELECT public.w() AS x WITH NO DATA;
--! exec
REFRESH MATERIALIZED VIEW mv

--! name: matview-refresh-index-calls-writer
--! class: indirect-write
--! policy: catalog
--! note: an index expression is evaluated for every row the refresh writes; IMMUTABLE, it reaches a writer through EXECUTE
--! setup
CREATE FUNCTION public.w() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
CREATE FUNCTION public.k(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ DECLARE r int; BEGIN EXECUTE 'SELECT public.w()' INTO r; RETURN $1 + r; END $$;
CREATE MATERIALIZED VIEW mv AS SELECT 1 AS x WITH NO DATA;
CREATE INDEX mv_k ON mv (public.k(x));
--! exec
REFRESH MATERIALIZED VIEW mv
