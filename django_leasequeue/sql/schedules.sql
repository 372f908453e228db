-- Periodic jobs (django_leasequeue.schedules, runtime.scheduler). A tick's job is inserted by
-- fire_schedule in the statement that advances its schedule's version: one winner per tick.

-- name: sync_schedules
-- A worker's declared schedules: insert or update them (a changed timing or a return from retirement restarts at now), retire this backend's others.
WITH declared AS (
    SELECT * FROM unnest(%(task_paths)s::text[], %(crons)s::text[], %(cron_timezones)s::text[],
                         %(everys)s::interval[], %(overlaps)s::text[], %(catch_ups)s::integer[],
                         %(next_run_ats)s::timestamptz[])
         AS d(task_path, cron, cron_timezone, every, overlap, catch_up, next_run_at)
), upserted AS (
    INSERT INTO leasequeue_schedule AS s (task_path, backend, cron, cron_timezone, every, overlap,
                                          catch_up, covered_until, next_run_at)
    SELECT task_path, %(backend)s::text, cron, cron_timezone, every, overlap, catch_up,
           %(now)s::timestamptz, next_run_at
    FROM declared
    ORDER BY task_path
    ON CONFLICT (task_path) DO UPDATE
    SET backend = excluded.backend,
        cron = excluded.cron,
        cron_timezone = excluded.cron_timezone,
        every = excluded.every,
        overlap = excluded.overlap,
        catch_up = excluded.catch_up,
        retired = false,
        covered_until = CASE WHEN s.retired OR (s.cron, s.cron_timezone, s.every)
                                  IS DISTINCT FROM (excluded.cron, excluded.cron_timezone, excluded.every)
                             THEN excluded.covered_until ELSE s.covered_until END,
        next_run_at = CASE WHEN s.retired OR (s.cron, s.cron_timezone, s.every)
                                IS DISTINCT FROM (excluded.cron, excluded.cron_timezone, excluded.every)
                           THEN excluded.next_run_at ELSE s.next_run_at END,
        version = s.version + 1
    WHERE (s.backend, s.cron, s.cron_timezone, s.every, s.overlap, s.catch_up, s.retired)
          IS DISTINCT FROM (excluded.backend, excluded.cron, excluded.cron_timezone,
                            excluded.every, excluded.overlap, excluded.catch_up, false)
    RETURNING s.task_path
), retired AS (
    UPDATE leasequeue_schedule
    SET retired = true, version = version + 1
    WHERE backend = %(backend)s::text AND NOT retired
      AND task_path <> ALL(%(task_paths)s::text[])
    RETURNING task_path
)
SELECT (SELECT count(*) FROM upserted) AS changed,
       (SELECT coalesce(array_agg(task_path ORDER BY task_path), '{}') FROM retired) AS retired;

-- name: due_schedules
-- The scheduler's check, once a second: the given schedules that are due, and when the next one is.
WITH active AS (
    SELECT task_path, version, covered_until, next_run_at
    FROM leasequeue_schedule
    WHERE task_path = ANY(%(task_paths)s::text[]) AND NOT paused AND NOT retired
)
SELECT task_path, version, covered_until, next_run_at, now() AS now
FROM active WHERE next_run_at <= now()
UNION ALL
SELECT NULL, NULL, NULL, min(next_run_at), now() FROM active WHERE next_run_at > now();

-- name: fire_schedule
-- Compare-and-swap on the schedule's version: insert the tick's job (unless overlap skips it) and advance the schedule, or do nothing.
WITH schedule AS (
    -- A concurrent fire makes this row wait, then fail the version check: it never fires twice.
    SELECT id, overlap, last_job_id FROM leasequeue_schedule
    WHERE task_path = %(task_path)s::text AND version = %(version)s::integer AND NOT retired
      AND (%(tick)s::timestamptz IS NULL OR NOT paused)
    FOR UPDATE
), previous AS (
    SELECT EXISTS (
        SELECT 1 FROM leasequeue_job AS job JOIN schedule ON job.id = schedule.last_job_id
        WHERE job.status IN ('queued', 'retrying', 'running')
    ) AS unfinished
), job AS (
    INSERT INTO leasequeue_job ({{scheduled_job_columns}})
    SELECT %(job_id)s::uuid, %(task_path)s::text, %(queue_name)s::text, %(priority)s::smallint,
           %(backend)s::text, '[]'::jsonb,
           CASE WHEN %(takes_scheduled_at)s::boolean
                THEN jsonb_build_object('scheduled_at', coalesce(%(tick)s::timestamptz, now()))
                ELSE '{}'::jsonb END,
           %(max_attempts)s::integer, %(timeout)s::float8, %(backoff)s::float8,
           %(unique_key)s::text, %(limits)s::jsonb, %(flow_key)s::text,
           %(concurrency_key)s::text, %(pending_key)s::text,
           now() + make_interval(secs => %(expires_after)s::float8), %(meta)s::jsonb
    FROM schedule, previous
    WHERE %(enqueue)s::boolean AND NOT (schedule.overlap = 'skip' AND previous.unfinished)
    ON CONFLICT (task_path, unique_key) WHERE status IN ('queued', 'retrying', 'running') AND unique_key IS NOT NULL
    DO NOTHING
    RETURNING id
)
UPDATE leasequeue_schedule AS s
SET version = s.version + 1,
    covered_until = coalesce(%(covered_until)s::timestamptz, s.covered_until),
    next_run_at = coalesce(%(next_run_at)s::timestamptz, s.next_run_at),
    missed_count = s.missed_count + %(missed)s::integer,
    skipped_count = s.skipped_count
                    + CASE WHEN %(enqueue)s::boolean AND NOT EXISTS (SELECT 1 FROM job) THEN 1 ELSE 0 END,
    last_job_id = coalesce((SELECT id FROM job), s.last_job_id),
    last_run_at = CASE WHEN EXISTS (SELECT 1 FROM job)
                       THEN coalesce(%(tick)s::timestamptz, now()) ELSE s.last_run_at END
FROM schedule
WHERE s.id = schedule.id
RETURNING s.version, (SELECT id FROM job) AS job_id;
