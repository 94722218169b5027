-- Class 5: the fence's own text changing meaning. sqlfence inserts
-- `writer_epoch = $e::bigint` and `AND inventory.writer_epoch < $e::bigint` (<= for the
-- repeatable billing.invoices). The `<` is resolved by the session: pg_catalog is searched
-- first only when the search_path does not list it, an exact match in an earlier schema
-- wins, a domain or another column type brings its own operator into play, and a
-- superuser can edit pg_operator. Make `writer_epoch < $e` always true and a stale epoch
-- overwrites (and lowers the epoch of) a newer claim's row.
--
-- The attack write is an ordinary write, fenced by sqlfence: no epoch sends nothing, so
-- the stale run is where the fence must hold.
-- Format: see the comment at the top of attack_test.go.

--! name: operator-public-before-pg-catalog
--! class: fence-meaning
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: operator-own-schema-first
--! class: fence-meaning
--! exec
CREATE SCHEMA evil
--! exec
CREATE FUNCTION evil.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always)
--! exec
SET search_path = evil, pg_catalog, public
--! exec
DELETE FROM inventory WHERE sku = 'a'

--! name: operator-search-path-by-set-config
--! class: fence-meaning
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
SELECT set_config('search_path', 'public, pg_catalog', false)
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: operator-search-path-set-local
--! class: fence-meaning
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
BEGIN
--! exec
SET LOCAL search_path TO public, pg_catalog
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'b'
--! exec
COMMIT

--! name: operator-search-path-role-setting
--! class: fence-meaning
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
ALTER ROLE ${user} IN DATABASE ${db} SET search_path = public, pg_catalog
--! reconnect
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: operator-and-search-path-from-migration
--! class: fence-meaning
--! note: nothing but an ordinary write goes through the driver
--! setup
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always);
ALTER DATABASE ${db} SET search_path = public, pg_catalog;
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: operator-user-schema
--! class: fence-meaning
--! exec
CREATE SCHEMA postgres
--! exec
CREATE FUNCTION postgres.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR postgres.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = postgres.always)
--! exec
SET search_path = "$user", pg_catalog, public
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: operator-repeatable-le
--! class: fence-meaning
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE billing.invoices SET total = 0 WHERE id = 1

--! name: operator-own-epoch-column
--! class: fence-meaning
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE reports SET body = 'stale'

--! name: operator-pg-temp
--! class: fence-meaning
--! note: the temporary schema is never searched for operators
--! exec
CREATE FUNCTION pg_temp.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR pg_temp.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = pg_temp.always)
--! exec
SET search_path = pg_temp, pg_catalog, public
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: operator-public-without-search-path
--! class: fence-meaning
--! note: with pg_catalog searched first the built-in operator wins
--! exec
CREATE FUNCTION public.always(bigint, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: domain-epoch-column-operator
--! class: fence-meaning
--! note: an exact match for (domain, bigint) beats the built-in operator that needs a coercion
--! exec
CREATE DOMAIN epoch_d AS bigint
--! exec
ALTER TABLE inventory ALTER COLUMN writer_epoch TYPE epoch_d
--! exec
CREATE FUNCTION public.always(epoch_d, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = epoch_d, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: numeric-epoch-column-operator
--! class: fence-meaning
--! exec
ALTER TABLE inventory ALTER COLUMN writer_epoch TYPE numeric
--! exec
CREATE FUNCTION public.always(numeric, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = numeric, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'b'

--! name: domain-epoch-column-from-migration
--! class: fence-meaning
--! setup
CREATE DOMAIN epoch_d AS bigint;
ALTER TABLE inventory ALTER COLUMN writer_epoch TYPE epoch_d;
--! exec
CREATE FUNCTION public.always(epoch_d, bigint) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT true'
--! exec
CREATE OPERATOR public.< (LEFTARG = epoch_d, RIGHTARG = bigint, FUNCTION = public.always)
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: text-epoch-column-implicit-cast
--! class: fence-meaning
--! note: the epoch compared as text: '5' < '30' is false but '10' < '3' is true
--! exec
ALTER TABLE inventory ALTER COLUMN writer_epoch TYPE text
--! exec
CREATE FUNCTION public.epoch_text(bigint) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT ''0'''
--! exec
CREATE CAST (bigint AS text) WITH FUNCTION public.epoch_text(bigint) AS IMPLICIT
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: catalog-edit-operator-code
--! class: fence-meaning
--! note: a superuser session rewires the built-in bigint < to >=
--! exec
UPDATE pg_operator SET oprcode = 'int8ge'::regproc WHERE oid = '<(bigint,bigint)'::regoperator
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'

--! name: bigint-domain-shadow
--! class: fence-meaning
--! note: `::bigint` is a grammar keyword for pg_catalog.int8; a type named bigint elsewhere cannot take its place
--! exec
CREATE DOMAIN public.bigint AS int CHECK (VALUE < 0)
--! exec
SET search_path = public, pg_catalog
--! exec
UPDATE inventory SET quantity = 0 WHERE sku = 'a'
