-- Session settings that pools and services set on every connection: application_name,
-- timeouts, time zone, the search_path of schema-per-tenant services, and the settings
-- drivers send themselves; SHOW and current_setting. None changes how the server reads
-- text or how operators resolve against pg_catalog (search_path here never puts a
-- schema before pg_catalog). Format: see the comment at the top of benign_test.go.

--! setup
CREATE SCHEMA tenant_42;
CREATE TABLE tenant_42.orders (id bigserial PRIMARY KEY, total numeric NOT NULL DEFAULT 0);
INSERT INTO tenant_42.orders (total) VALUES (10), (20);

--! name: session-application-name-set-config
--! source: pools (pgxpool AfterConnect, River, GORM callbacks)
--! args: ["worker-1"]
SELECT set_config('application_name', $1, false)

--! name: session-application-name
SET application_name = 'worker'

--! name: session-application-name-to
SET application_name TO 'api-server'

--! name: session-statement-timeout
SET statement_timeout = '5s'

--! name: session-statement-timeout-number
SET statement_timeout TO 30000

--! name: session-statement-timeout-set-config-local
--! args: ["10s"]
SELECT set_config('statement_timeout', $1, true)

--! name: session-lock-timeout
SET lock_timeout = '2s'

--! name: session-idle-in-transaction-timeout
SET idle_in_transaction_session_timeout = '60s'

--! name: session-timezone
SET TimeZone = 'UTC'

--! name: session-time-zone-syntax
SET TIME ZONE 'Europe/Berlin'

--! name: session-timezone-set-config
--! args: ["UTC"]
SELECT set_config('TimeZone', $1, false)

--! name: session-search-path-tenant
--! source: schema-per-tenant services
SET search_path = tenant_42, public

--! name: session-read-tenant-table
--! source: schema-per-tenant services
SELECT id, total FROM orders ORDER BY id

--! name: session-write-tenant-table
--! source: schema-per-tenant services
--! args: [5, 1]
UPDATE orders SET total = total + $1 WHERE id = $2

--! name: session-search-path-quoted
SET search_path TO "$user", public

--! name: session-search-path-set-config
--! args: ["tenant_42, public"]
SELECT set_config('search_path', $1, false)

--! name: session-search-path-public
SET search_path = public

--! name: session-datestyle
--! source: lib/pq and pgx startup habits
SET datestyle = 'ISO, MDY'

--! name: session-intervalstyle
SET intervalstyle = 'iso_8601'

--! name: session-extra-float-digits
SET extra_float_digits = 3

--! name: session-work-mem
SET work_mem = '64MB'

--! name: session-jit-off
SET jit = off

--! name: session-synchronous-commit
SET synchronous_commit = remote_apply

--! name: session-synchronous-commit-reset
RESET synchronous_commit

--! name: session-client-min-messages
SET client_min_messages = warning

--! name: session-default-isolation
SET default_transaction_isolation = 'repeatable read'

--! name: session-characteristics
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED

--! name: session-session-keyword
SET SESSION statement_timeout = 0

--! name: session-strings-on
--! source: drivers that assert the default
SET standard_conforming_strings = on

--! name: session-strings-on-set-config
--! source: drivers that assert the default through set_config
SELECT set_config('standard_conforming_strings', 'on', false)

--! name: session-strings-on-true
SET standard_conforming_strings = true

--! name: session-reset-one
RESET statement_timeout

--! name: session-reset-application-name
RESET application_name

--! name: session-show-search-path
SHOW search_path

--! name: session-show-timezone
SHOW TimeZone

--! name: session-show-statement-timeout
SHOW statement_timeout

--! name: session-show-strings
SHOW standard_conforming_strings

--! name: session-show-all
SHOW ALL

--! name: session-current-setting
SELECT current_setting('application_name')

--! name: session-current-setting-missing-ok
SELECT current_setting('app.tenant_id', true)

--! name: session-custom-setting
--! source: row-level-security tenants (app.tenant_id)
--! args: ["42"]
SELECT set_config('app.tenant_id', $1, false)
