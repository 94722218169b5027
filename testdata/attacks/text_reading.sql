-- Class 4: the server reading text differently from the parser that decided it.
--
-- client_encoding: SJIS, BIG5, GBK, GB18030 and SHIFT_JIS_2004 have two-byte characters
-- whose second byte is 0x5C, the backslash. The server converts the client's text to the
-- database encoding before it lexes it, so that backslash is gone; sqlfence's parser reads
-- the same bytes as UTF-8 and sees it. The payloads are valid UTF-8 (so the parser does
-- not refuse them): "さ" is E3 81 95, to SJIS the characters E381 and 955C (表); "丳" is
-- E4 B8 B3, to BIG5 E4B8 and B35C (許); "丕" is E4 B8 95, to GBK/GB18030 E4B8 and 955C.
-- In E'さ\'; DELETE …; --' the parser sees one string literal, the server a string, a
-- DELETE and a comment.
--
-- standard_conforming_strings: with it off the server reads \' inside '…' as a quote; the
-- payload 'a\' /*'; DELETE …; --*/ is a string and a comment to the parser, a string, a
-- DELETE and a comment to the server. The registered driver pins it on in the startup
-- message (open: driver); a connector of one's own does not.
--
-- Payloads go without arguments, so pgx sends them with the simple protocol.
-- Format: see the comment at the top of attack_test.go.

--! name: sjis-set-client-encoding
--! class: text-reading
--! exec
SET client_encoding = 'SJIS'
--! exec
SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: sjis-set-config
--! class: text-reading
--! exec
SELECT set_config('client_encoding', 'SJIS', false)
--! exec
SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: sjis-pg-settings
--! class: text-reading
--! exec
UPDATE pg_settings SET setting = 'SJIS' WHERE name = 'client_encoding'
--! exec
SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$b$$; --'

--! name: sjis-set-local-in-transaction
--! class: text-reading
--! exec
BEGIN
--! exec
SET LOCAL client_encoding = 'SJIS'
--! exec
SELECT E'さ\'; UPDATE billing.invoices SET total = 0; --'
--! exec
COMMIT

--! name: big5-set-client-encoding
--! class: text-reading
--! exec
SET client_encoding = 'BIG5'
--! exec
SELECT E'丳\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: gbk-set-client-encoding
--! class: text-reading
--! exec
SET client_encoding = 'GBK'
--! exec
SELECT E'丕\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: gb18030-set-client-encoding
--! class: text-reading
--! exec
SET client_encoding = 'GB18030'
--! exec
SELECT E'丕\'; UPDATE reports SET body = $$gone$$; --'

--! name: shift-jis-2004-control-character
--! class: text-reading
--! note: U+0095 (C2 95) is valid UTF-8; to SHIFT_JIS_2004 C2 is a half-width katakana and 955C a kanji
--! exec
SET client_encoding = 'SHIFT_JIS_2004'
--! exec bytes
SELECT E'\xc2\x95\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: sjis-invalid-utf8-lead-byte
--! class: text-reading
--! note: a lone lead byte is not UTF-8; the parser's output cannot carry it
--! exec
SET client_encoding = 'SJIS'
--! exec bytes
SELECT E'\x95\x5c'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: sjis-backslash-quote-on
--! class: text-reading
--! exec
UPDATE pg_settings SET setting = 'on' WHERE name = 'backslash_quote'
--! exec
SET client_encoding = 'SJIS'
--! exec
SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: client-encoding-role-setting-reconnect
--! class: text-reading
--! note: pgx does not send client_encoding in its startup message, so a role setting reaches every new connection
--! exec
ALTER ROLE ${user} IN DATABASE ${db} SET client_encoding = 'SJIS'
--! reconnect
--! exec
SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: client-encoding-database-default
--! class: text-reading
--! note: a database default set outside the driver; nothing pins client_encoding at connect
--! setup
ALTER DATABASE ${db} SET client_encoding = 'SJIS';
--! exec
SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$a$$; --'

--! name: scs-set-off
--! class: text-reading
--! exec
SET standard_conforming_strings = off
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-pg-settings
--! class: text-reading
--! exec
UPDATE pg_settings SET setting = 'off' WHERE name = 'standard_conforming_strings'
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-pg-settings-split-name
--! class: text-reading
--! exec
UPDATE pg_settings SET setting = 'off' WHERE name = 'standard_' || 'conforming_strings'
--! exec
SELECT 'a\' /*'; UPDATE inventory SET quantity = 0; --*/

--! name: scs-set-config-non-literal
--! class: text-reading
--! exec
SELECT set_config('standard_' || 'conforming_strings', 'off', false)
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-function-through-driver
--! class: text-reading
--! exec
CREATE FUNCTION strings_off() RETURNS text LANGUAGE sql AS $$ SELECT set_config('standard_conforming_strings', 'off', false) $$
--! exec
SELECT strings_off()
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-migration-function
--! class: text-reading
--! setup
CREATE FUNCTION legacy_mode() RETURNS text LANGUAGE sql AS $$ SELECT set_config('standard_conforming_strings', 'off', false) $$;
--! exec
SELECT legacy_mode()
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-internal-function-alias
--! class: text-reading
--! note: set_config under another name: LANGUAGE internal binds the C function set_config_by_name
--! exec
CREATE FUNCTION setting(text, text, bool) RETURNS text LANGUAGE internal AS 'set_config_by_name'
--! exec
SELECT setting('standard_' || 'conforming_strings', 'off', false)
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-do-block-dynamic
--! class: text-reading
--! exec
DO $$ BEGIN EXECUTE 'SET standard_' || 'conforming_strings = off'; END $$
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-do-block-perform
--! class: text-reading
--! exec
DO $$ BEGIN PERFORM set_config('standard_conforming_strings', 'off', false); END $$
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-alter-database-through-driver
--! class: text-reading
--! exec
ALTER DATABASE ${db} SET standard_conforming_strings = off
--! reconnect
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-database-default-connector
--! class: text-reading
--! note: a database default set by a DBA; sqlfence.NewConnector does not pin the setting
--! setup
ALTER DATABASE ${db} SET standard_conforming_strings = off;
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-role-default-connector
--! class: text-reading
--! setup
ALTER ROLE ${user} IN DATABASE ${db} SET standard_conforming_strings = off;
--! exec
SELECT 'a\' /*'; UPDATE inventory SET quantity = 0; --*/

--! name: scs-database-default-driver
--! class: text-reading
--! open: driver
--! note: the registered driver pins the setting in the startup message
--! setup
ALTER DATABASE ${db} SET standard_conforming_strings = off;
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-database-default-driver-reset-all
--! class: text-reading
--! open: driver
--! note: RESET ALL returns to the session's start value, the pinned one
--! setup
ALTER DATABASE ${db} SET standard_conforming_strings = off;
--! exec
RESET ALL
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-role-default-driver-session-authorization
--! class: text-reading
--! open: driver
--! setup
ALTER ROLE ${user} IN DATABASE ${db} SET standard_conforming_strings = off;
--! exec
SET SESSION AUTHORIZATION DEFAULT
--! exec
RESET SESSION AUTHORIZATION
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

--! name: scs-set-to-default-connector
--! class: text-reading
--! note: the database default is off, so SET … TO DEFAULT turns it off without saying "off"
--! setup
ALTER DATABASE ${db} SET standard_conforming_strings = off;
--! exec
SET standard_conforming_strings = on
--! exec
SET standard_conforming_strings TO DEFAULT
--! exec
SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/

-- The server's grammar is not the parser's: pg_query reads PostgreSQL 17's grammar,
-- where JSON_ARRAY(…), JSON(…), JSON_SCALAR(…) … are constructs of their own; an older
-- server reads the same text as a call of a function of that name, and a user
-- function of that name runs (on 17 and later the constructs never call one). The
-- driver reads the server's version at connect and refuses them on older servers.

--! name: server-grammar-json-array
--! class: text-reading
--! setup
CREATE FUNCTION public.json_array(a int, b int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN DELETE FROM inventory; RETURN a; END $$;
--! query
SELECT JSON_ARRAY(1, 2)

--! name: server-grammar-json-scalar
--! class: text-reading
--! setup
CREATE FUNCTION public.json_scalar(a int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN a; END $$;
--! query
SELECT JSON_SCALAR(1)

--! name: server-grammar-json-in-fenced-write
--! class: text-reading
--! setup
CREATE FUNCTION public.json(a text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN DELETE FROM billing.invoices; RETURN a; END $$;
--! exec
UPDATE inventory SET note = JSON('{}')::text WHERE sku = 'a'
