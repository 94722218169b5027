-- River-style queue queries on unprotected tables (after riverqueue/river's
-- riverdriver/riverpgxv5 queries, simplified to this schema).
-- Format: see the comment at the top of benign_test.go.

--! setup
CREATE TYPE river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled');
CREATE TABLE river_job (
	id bigserial PRIMARY KEY,
	state river_job_state NOT NULL DEFAULT 'available',
	attempt smallint NOT NULL DEFAULT 0,
	max_attempts smallint NOT NULL,
	attempted_at timestamptz,
	created_at timestamptz NOT NULL DEFAULT now(),
	finalized_at timestamptz,
	scheduled_at timestamptz NOT NULL DEFAULT now(),
	priority smallint NOT NULL DEFAULT 1,
	args jsonb NOT NULL,
	attempted_by text[],
	errors jsonb[],
	kind text NOT NULL,
	metadata jsonb NOT NULL DEFAULT '{}',
	queue text NOT NULL DEFAULT 'default',
	tags varchar(255)[] NOT NULL DEFAULT '{}'
);
CREATE TABLE river_leader (elected_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, leader_id text NOT NULL, name text PRIMARY KEY DEFAULT 'default');
CREATE TABLE river_queue (name text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), metadata jsonb NOT NULL DEFAULT '{}', paused_at timestamptz, updated_at timestamptz NOT NULL DEFAULT now());
INSERT INTO river_queue (name) VALUES ('default');

--! name: river-job-insert
--! source: River JobInsertFastMany (one row)
--! args: ["{\"email\": \"a@example.com\"}", "send_email", 25, null, 1, "default", null, "available", "{}"]
INSERT INTO river_job (args, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags) VALUES ($1::jsonb, $2, $3, coalesce($4::jsonb, '{}'), $5, $6, coalesce($7::timestamptz, now()), $8::river_job_state, coalesce($9::varchar(255)[], '{}')) RETURNING *

--! name: river-job-get-available
--! source: River JobGetAvailable
--! args: ["default", null, 10, "worker-1"]
WITH locked_jobs AS (
    SELECT * FROM river_job
    WHERE state = 'available' AND queue = $1 AND scheduled_at <= coalesce($2::timestamptz, now())
    ORDER BY priority ASC, scheduled_at ASC, id ASC
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE river_job
SET state = 'running', attempt = river_job.attempt + 1, attempted_at = now(), attempted_by = array_append(river_job.attempted_by, $4::text)
FROM locked_jobs
WHERE river_job.id = locked_jobs.id
RETURNING river_job.*

--! name: river-job-set-completed
--! source: River JobSetStateIfRunningMany, simplified
--! args: ["{1}", "2024-05-01T10:00:00Z"]
UPDATE river_job SET state = 'completed', finalized_at = $2::timestamptz WHERE id = ANY($1::bigint[]) AND state = 'running' RETURNING id

--! name: river-job-retryable
--! args: [1, "{\"error\": \"boom\"}"]
UPDATE river_job SET state = 'retryable', errors = array_append(errors, $2::jsonb), scheduled_at = now() + interval '10 seconds' WHERE id = $1

--! name: river-job-schedule
--! source: River JobSchedule
--! args: [100]
WITH jobs_to_schedule AS (
    SELECT id FROM river_job
    WHERE state IN ('retryable', 'scheduled') AND queue IS NOT NULL AND priority >= 0 AND scheduled_at <= now()
    ORDER BY priority, scheduled_at, id
    LIMIT $1
    FOR UPDATE
)
UPDATE river_job SET state = 'available' FROM jobs_to_schedule WHERE river_job.id = jobs_to_schedule.id RETURNING river_job.id

--! name: river-job-delete-before
--! source: River JobDeleteBefore
--! args: ["2024-01-01T00:00:00Z", 1000]
DELETE FROM river_job WHERE id IN (SELECT id FROM river_job WHERE state = 'completed' AND finalized_at < $1::timestamptz ORDER BY id LIMIT $2)

--! name: river-job-count
SELECT count(*) FROM river_job WHERE state = 'available' AND queue = 'default'

--! name: river-notify
--! source: River PGNotifyMany
--! args: ["river_insert", "{\"queue\": \"default\"}"]
SELECT pg_notify(concat(current_schema(), '.', $1::text), $2)

--! name: river-leader-elect
--! source: River LeaderAttemptElect
--! args: ["worker-1", "15 seconds"]
INSERT INTO river_leader (leader_id, elected_at, expires_at) VALUES ($1, now(), now() + $2::interval) ON CONFLICT (name) DO NOTHING

--! name: river-leader-reelect
--! args: ["worker-1", "15 seconds"]
UPDATE river_leader SET expires_at = now() + $2::interval WHERE leader_id = $1

--! name: river-leader-resign
--! args: ["worker-1"]
DELETE FROM river_leader WHERE leader_id = $1

--! name: river-queue-pause
--! args: ["default"]
UPDATE river_queue SET paused_at = now(), updated_at = now() WHERE name = $1 AND paused_at IS NULL RETURNING name

--! name: river-queue-get
--! args: ["default"]
SELECT name, created_at, metadata, paused_at, updated_at FROM river_queue WHERE name = $1

--! name: river-queue-resume
--! args: ["default"]
UPDATE river_queue SET paused_at = NULL, updated_at = now() WHERE name = $1
