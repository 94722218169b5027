-- Advisory locks (leader election, migrations, per-key serialisation) and
-- LISTEN/NOTIFY (queues, cache invalidation). Format: see the comment at the top of
-- benign_test.go.

--! name: lock-advisory
--! source: golang-migrate, leader election
--! args: [42]
SELECT pg_advisory_lock($1)

--! name: lock-advisory-unlock
--! args: [42]
SELECT pg_advisory_unlock($1)

--! name: lock-try-advisory
--! args: [43]
SELECT pg_try_advisory_lock($1)

--! name: lock-advisory-two-keys
SELECT pg_advisory_lock_shared(1, 2)

--! name: lock-advisory-unlock-shared
SELECT pg_advisory_unlock_shared(1, 2)

--! name: lock-hashtext
--! source: per-key locks
--! args: ["order:17"]
SELECT pg_try_advisory_lock(hashtextextended($1, 0))

--! name: lock-unlock-all
SELECT pg_advisory_unlock_all()

--! name: lock-xact-in-transaction-begin
BEGIN

--! name: lock-try-advisory-xact
--! source: River, per-transaction locks
--! args: [44]
SELECT pg_try_advisory_xact_lock($1)

--! name: lock-advisory-xact-hashtext
--! args: ["job:1"]
SELECT pg_advisory_xact_lock(hashtext($1))

--! name: lock-xact-in-transaction-commit
COMMIT

--! name: lock-inspect
SELECT locktype, classid, objid, mode FROM pg_locks WHERE locktype = 'advisory'

--! name: notify-listen
LISTEN jobs_ready

--! name: notify-listen-quoted
LISTEN "public.river_insert"

--! name: notify-plain
NOTIFY jobs_ready

--! name: notify-payload
NOTIFY jobs_ready, 'job 17'

--! name: notify-pg-notify
--! args: ["jobs_ready", "{\"id\": 17}"]
SELECT pg_notify($1, $2)

--! name: notify-pg-notify-json
SELECT pg_notify('jobs_ready', json_build_object('id', 18, 'kind', 'email')::text)

--! name: notify-unlisten
UNLISTEN jobs_ready

--! name: notify-unlisten-all
UNLISTEN *
