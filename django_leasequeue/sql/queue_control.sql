-- Queue control at run time (django_leasequeue.control): paused queues, the expiry of jobs not
-- started in time, a job's snooze, and unique keys held over a period. Claims honour pauses and
-- expiries in their own statements (sql/jobs.sql, sql/flow.sql).

-- name: lock_paused_queues
-- Pause: wait for every claim in flight (each holds the table while it runs), and hold off new ones until the transaction ends.
LOCK TABLE leasequeue_paused_queue IN ACCESS EXCLUSIVE MODE;

-- name: pause_queue
-- Pause a queue (after lock_paused_queues); pausing it again only changes the reason. Says whether it was running before.
INSERT INTO leasequeue_paused_queue AS paused (queue_name, reason)
VALUES (%(queue_name)s::text, %(reason)s::text)
ON CONFLICT (queue_name) DO UPDATE SET reason = excluded.reason
RETURNING paused.xmax = 0 AS newly_paused;

-- name: resume_queue
-- Resume a queue; returns it if it was paused.
DELETE FROM leasequeue_paused_queue WHERE queue_name = %(queue_name)s::text
RETURNING queue_name;

-- name: paused_queues
-- The paused queues, with the reason given and since when.
SELECT queue_name, reason, paused_at FROM leasequeue_paused_queue ORDER BY queue_name;

-- name: open_queues
-- The paused queues and, while there is one, the queues to claim from: the given ones (NULL: those with waiting unlimited jobs, by a loose index scan) less the paused.
WITH RECURSIVE paused AS MATERIALIZED (
    SELECT coalesce(array_agg(queue_name::text ORDER BY queue_name), '{}') AS names
    FROM leasequeue_paused_queue
), present AS (
    (SELECT queue_name FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
       AND %(queues)s::text[] IS NULL AND (SELECT names <> '{}' FROM paused)
     ORDER BY queue_name LIMIT 1)
    UNION ALL
    SELECT (SELECT job.queue_name FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key IS NULL
              AND job.queue_name > present.queue_name
            ORDER BY job.queue_name LIMIT 1)
    FROM present
    WHERE present.queue_name IS NOT NULL
)
SELECT paused.names AS paused,
       ARRAY(SELECT name FROM (SELECT queue_name::text AS name FROM present
                               WHERE queue_name IS NOT NULL
                               UNION
                               SELECT unnest(%(queues)s::text[])) AS served
             WHERE name <> ALL(paused.names)
             ORDER BY name) AS open
FROM paused;

-- name: due_in_queue
-- Resume: the first %(limit)s::integer due unlimited jobs of a queue in claim order, to wake workers for.
SELECT id FROM (
    SELECT id, expires_at FROM leasequeue_job
    WHERE queue_name = %(queue_name)s::text AND status IN ('queued', 'retrying')
      AND flow_key IS NULL AND run_after <= now()
    ORDER BY priority DESC, run_after, id
    LIMIT 1000
) AS walked
WHERE walked.expires_at IS NULL OR walked.expires_at > now()
LIMIT %(limit)s::integer;

-- name: expire_jobs
-- Sweep: up to %(limit)s::integer waiting jobs past their expiry end failed with JobExpired; no attempt is consumed.
WITH expired AS (
    SELECT id FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND expires_at <= now()
    ORDER BY expires_at
    LIMIT %(limit)s::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE leasequeue_job AS job
SET status = 'failed',
    finished_at = now(),
    errors = job.errors || jsonb_build_array(jsonb_build_object(
        'attempt', job.attempt, 'worker_id', NULL, 'at', now(),
        'exception_class_path', 'django_leasequeue.exceptions.JobExpired',
        'message', format('Expired at %%s: not started within its expires_after.', job.expires_at),
        'traceback', '')),
    last_error_class = 'django_leasequeue.exceptions.JobExpired'
FROM expired
WHERE job.id = expired.id
RETURNING job.id, job.queue_name, job.task_path;

-- name: expire_doomed
-- These jobs end failed with JobExpired if their next run was just set at or past their expiry (a retry or snooze that could never start).
UPDATE leasequeue_job
SET status = 'failed',
    finished_at = now(),
    errors = errors || jsonb_build_array(jsonb_build_object(
        'attempt', attempt, 'worker_id', NULL, 'at', now(),
        'exception_class_path', 'django_leasequeue.exceptions.JobExpired',
        'message', format('Expired: its next run (%%s) would start after its expiry (%%s).',
                          run_after, expires_at),
        'traceback', '')),
    last_error_class = 'django_leasequeue.exceptions.JobExpired'
WHERE id = ANY(%(ids)s::uuid[]) AND status || '' IN ('queued', 'retrying') -- as in claim_by_ids
  AND run_after >= expires_at
RETURNING id, queue_name, task_path;

-- name: snooze
-- Fenced: the lease holder puts its job back for %(seconds)s::float8 seconds without counting the attempt; past max_snoozes it fails (TooManySnoozes), if cancel was requested it ends cancelled.
UPDATE leasequeue_job
SET status = CASE WHEN cancel_requested THEN 'cancelled'
                  WHEN snoozes >= %(max_snoozes)s::integer THEN 'failed'
                  ELSE 'queued' END,
    run_after = CASE WHEN cancel_requested OR snoozes >= %(max_snoozes)s::integer THEN run_after
                     ELSE now() + make_interval(secs => %(seconds)s::float8) END,
    attempt = CASE WHEN cancel_requested OR snoozes >= %(max_snoozes)s::integer THEN attempt
                   ELSE attempt - 1 END,
    -- As for an attempt handed back: a snoozed attempt and its worker are not counted.
    worker_ids = CASE WHEN cancel_requested OR snoozes >= %(max_snoozes)s::integer THEN worker_ids
                      ELSE worker_ids - (jsonb_array_length(worker_ids) - 1) END,
    snoozes = snoozes + 1,
    finished_at = CASE WHEN cancel_requested OR snoozes >= %(max_snoozes)s::integer THEN now() END,
    errors = CASE WHEN NOT cancel_requested AND snoozes >= %(max_snoozes)s::integer
                  THEN errors || jsonb_build_array(jsonb_build_object(
                      'attempt', attempt, 'worker_id', worker_id, 'at', now(),
                      'exception_class_path', 'django_leasequeue.exceptions.TooManySnoozes',
                      'message', format('Snoozed more than max_snoozes (%%s) times.',
                                        %(max_snoozes)s::integer),
                      'traceback', ''))
                  ELSE errors END,
    last_error_class = CASE WHEN NOT cancel_requested AND snoozes >= %(max_snoozes)s::integer
                            THEN 'django_leasequeue.exceptions.TooManySnoozes'
                            ELSE last_error_class END,
    lease_expires_at = NULL
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id, status, run_after, expires_at;

-- name: lock_unique_keys
-- unique_for: take (waiting) the enqueue locks of these tasks' unique keys, held until the caller's transaction ends; the insert that follows sees every earlier holder.
SELECT count(pg_advisory_xact_lock(1279677525, hashtext(task_path || E'\x1f' || key))) AS locked
FROM unnest(%(task_paths)s::text[], %(keys)s::text[]) AS held(task_path, key);

-- name: unique_key_holders
-- Read back: the jobs holding these (task, unique key) pairs, unfinished or within their unique_for period (the newest per pair), as job_results.
SELECT DISTINCT ON (job.task_path, job.unique_key)
       job.id, job.task_path, job.queue_name, job.priority, job.backend, job.status,
       job.run_after, job.args, job.kwargs, job.result, job.errors, job.worker_ids,
       job.enqueued_at, job.started_at, job.last_attempted_at, job.finished_at, job.unique_key
FROM leasequeue_job AS job
JOIN unnest(%(task_paths)s::text[], %(unique_keys)s::text[]) AS held(task_path, unique_key)
  ON job.task_path = held.task_path AND job.unique_key = held.unique_key
WHERE job.status IN ('queued', 'retrying', 'running') OR job.unique_until > now()
ORDER BY job.task_path, job.unique_key, job.id DESC;
