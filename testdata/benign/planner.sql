-- Planner settings, pool resets and named arguments: statements that change how a
-- plan is chosen or return the session to its startup role, never what a statement
-- means. Format: see the comment at the top of benign_test.go.

--! setup
CREATE OR REPLACE FUNCTION slug(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT lower(regexp_replace(t, '[^a-zA-Z0-9]+', '-', 'g')) $$;

--! name: planner-enable-seqscan
SET enable_seqscan = off

--! name: planner-enable-seqscan-local
SET LOCAL enable_seqscan TO off

--! name: planner-plan-cache-mode
--! source: pgx users working around generic plans
SET plan_cache_mode = force_custom_plan

--! name: planner-jit-off
SET jit = off

--! name: planner-jit-above-cost
SET jit_above_cost = 500000

--! name: planner-jit-inline-above-cost
SET jit_inline_above_cost = -1

--! name: planner-jit-optimize-above-cost
SET jit_optimize_above_cost = -1

--! name: planner-geqo-threshold
SET geqo_threshold = 14

--! name: planner-default-statistics-target
SET default_statistics_target = 200

--! name: planner-random-page-cost
SET random_page_cost = 1.1

--! name: planner-max-parallel-workers
SET max_parallel_workers = 4

--! name: planner-max-parallel-maintenance-workers
SET max_parallel_maintenance_workers = 2

--! name: planner-min-parallel-table-scan-size
SET min_parallel_table_scan_size = '16MB'

--! name: planner-min-parallel-index-scan-size
SET min_parallel_index_scan_size = '1MB'

--! name: planner-constraint-exclusion
SET constraint_exclusion = partition

--! name: planner-recursive-worktable-factor
SET recursive_worktable_factor = 20

--! name: planner-gin-pending-list-limit
SET gin_pending_list_limit = '8MB'

--! name: planner-set-config
--! args: ["off"]
SELECT set_config('enable_nestloop', $1, true)

--! name: pool-reset-role
--! source: pgbouncer server_reset_query, pgpool reset_query_list
RESET ROLE

--! name: pool-reset-session-authorization
--! source: pgbouncer server_reset_query
RESET SESSION AUTHORIZATION

--! name: named-arg-colon-equals
SELECT make_interval(days := 1, hours := 2)

--! name: named-arg-arrow
SELECT make_interval(days => 1, hours => 2)

--! name: named-arg-colon-equals-safe-function
--! args: ["acme"]
SELECT slug(t := $1)
