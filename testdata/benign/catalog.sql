-- Reads of pg_catalog and information_schema: drivers' type loading, health checks,
-- admin pages, migration tools. Format: see the comment at the top of benign_test.go.

--! name: catalog-version
SELECT version()

--! name: catalog-server-version
SHOW server_version

--! name: catalog-current-schema
SELECT current_schema()

--! name: catalog-current-user
SELECT current_user, session_user, current_database()

--! name: catalog-backend-pid
SELECT pg_backend_pid()

--! name: catalog-in-recovery
--! source: health checks, pgbouncer-aware pools
SELECT pg_is_in_recovery()

--! name: catalog-ping
--! source: health checks
SELECT 1

--! name: catalog-tables
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2

--! name: catalog-columns
--! args: ["inventory"]
SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position

--! name: catalog-pgx-type-by-oid
--! source: pgx LoadType
--! args: [25]
SELECT t.oid, t.typname, t.typtype, t.typelem, t.typbasetype FROM pg_type t WHERE t.oid = $1

--! name: catalog-pgx-type-by-name
--! source: pgx LoadType by name
--! args: ["int8"]
SELECT $1::text::regtype::oid

--! name: catalog-enum-labels
--! source: pgx LoadType of an enum
--! args: [16]
SELECT enumlabel FROM pg_enum WHERE enumtypid = $1 ORDER BY enumsortorder

--! name: catalog-stat-activity
SELECT pid, state, application_name FROM pg_stat_activity WHERE datname = current_database()

--! name: catalog-database-size
SELECT pg_size_pretty(pg_database_size(current_database()))

--! name: catalog-user-tables-stats
SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables ORDER BY relname

--! name: catalog-settings-strings
--! source: a driver checking how the server reads strings
SELECT setting FROM pg_settings WHERE name = 'standard_conforming_strings'

--! name: catalog-current-setting-strings
SELECT current_setting('standard_conforming_strings')

--! name: catalog-setting-by-parameter
--! args: ["max_connections"]
SELECT setting FROM pg_settings WHERE name = $1

--! name: catalog-table-privilege
SELECT has_table_privilege('inventory', 'UPDATE')

--! name: catalog-to-regclass
SELECT to_regclass('public.inventory') IS NOT NULL

--! name: catalog-constraints-of-protected
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'inventory'::regclass ORDER BY conname

--! name: catalog-indexes-of-protected
SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'inventory'

--! name: catalog-views
SELECT table_name FROM information_schema.views WHERE table_schema = 'public'

--! name: catalog-routines
SELECT routine_name, routine_type FROM information_schema.routines WHERE routine_schema = 'public'

--! name: catalog-locks
SELECT locktype, mode, granted FROM pg_locks WHERE pid = pg_backend_pid()

--! name: catalog-databases
SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY datname

--! name: catalog-postmaster-start
SELECT pg_postmaster_start_time()

--! name: catalog-function-definition
SELECT pg_get_functiondef('now()'::regprocedure)

--! name: catalog-relation-size
SELECT pg_total_relation_size('inventory'), pg_relation_size('billing.invoices')
