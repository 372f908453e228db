-- Reads: TaskResults, statuses and progress read back, the admin's queue summary and task list.

-- name: job_results
-- Read back: what a TaskResult is built from, for the given job ids.
SELECT id, task_path, queue_name, priority, backend, status, run_after, args, kwargs, result,
       errors, worker_ids, enqueued_at, started_at, last_attempted_at, finished_at
FROM leasequeue_job
WHERE id = ANY(%(ids)s::uuid[]);

-- name: jobs_listed
-- The testing helpers' read: the jobs of a task (any when NULL) in a queue (any when NULL) with one of these statuses (any when NULL), oldest first, as job_results.
SELECT id, task_path, queue_name, priority, backend, status, run_after, args, kwargs, result,
       errors, worker_ids, enqueued_at, started_at, last_attempted_at, finished_at
FROM leasequeue_job
WHERE (%(task_path)s::text IS NULL OR task_path = %(task_path)s::text)
  AND (%(queue_name)s::text IS NULL OR queue_name = %(queue_name)s::text)
  AND (%(statuses)s::text[] IS NULL OR status = ANY(%(statuses)s::text[]))
ORDER BY enqueued_at, id;

-- name: job_statuses
-- Read back: each job's status now, and whether another unfinished job of its task holds its unique key.
SELECT id, status,
       unique_key IS NOT NULL AND EXISTS (
           SELECT 1 FROM leasequeue_job AS holder
           WHERE holder.task_path = job.task_path AND holder.unique_key = job.unique_key
             AND holder.id <> job.id
             AND holder.status IN ('queued', 'retrying', 'running')) AS key_held
FROM leasequeue_job AS job
WHERE id = ANY(%(ids)s::uuid[]);

-- name: job_progress
-- Read back: what a progress viewer is told about one job (status, progress, attempt).
SELECT id, status, progress, attempt FROM leasequeue_job WHERE id = %(id)s::uuid;

-- name: due_by_queue
-- How many jobs are due and unclaimed, per queue (a burst says what it leaves behind).
SELECT queue_name, count(*) AS due FROM leasequeue_job
WHERE status IN ('queued', 'retrying') AND run_after <= now()
GROUP BY queue_name;

-- name: queue_summary
-- Per queue: counts (exact up to %(exact_up_to)s, estimated from index probes above), oldest due age, finished last minute.
WITH RECURSIVE pairs AS (
    -- Loose index scan: one probe of the status_queue index per (status, queue) present.
    (SELECT status, queue_name FROM leasequeue_job
     WHERE status <> 'succeeded' ORDER BY status, queue_name LIMIT 1)
    UNION ALL
    SELECT next.status, next.queue_name FROM pairs, LATERAL (
        SELECT status, queue_name FROM leasequeue_job
        WHERE status <> 'succeeded' AND (status, queue_name) > (pairs.status, pairs.queue_name)
        ORDER BY status, queue_name LIMIT 1) AS next
), capped AS MATERIALIZED (
    SELECT pairs.status, pairs.queue_name,
           (SELECT count(*) FROM (
                -- In index order, so that it is a walk of the status_queue index that stops
                -- at the cap (never a bitmap of the whole backlog).
                SELECT 1 FROM leasequeue_job AS job
                WHERE job.status = pairs.status AND job.queue_name = pairs.queue_name
                  AND job.status <> 'succeeded'
                ORDER BY job.status, job.queue_name, job.id
                LIMIT %(exact_up_to)s::integer) AS counted) AS exact
    FROM pairs
    WHERE pairs.status IN ('queued', 'running', 'retrying', 'failed')
), counts AS (
    -- Over the cap: estimated from a bounded number of index probes (leasequeue_estimate_entries,
    -- sql/functions/: chains of probes that follow bursts of jobs), as due_backlog estimates.
    SELECT status, queue_name, exact >= %(exact_up_to)s::integer AS estimated,
           CASE WHEN exact < %(exact_up_to)s::integer THEN exact
                ELSE greatest(exact, round(leasequeue_estimate_entries(
                         status, queue_name, %(slices)s::integer, %(per_probe)s::integer,
                         %(chain)s::integer, false))::bigint) END AS jobs
    FROM capped
), due AS (
    SELECT queues.queue_name,
           (SELECT min(run_after) FROM leasequeue_job
            WHERE status IN ('queued', 'retrying') AND queue_name = queues.queue_name
              AND run_after <= now()) AS oldest_due
    FROM (SELECT DISTINCT queue_name FROM pairs WHERE status IN ('queued', 'retrying')) AS queues
), finished AS (
    SELECT queue_name, count(*) AS finished_last_minute
    FROM leasequeue_job
    WHERE status IN ('succeeded', 'failed', 'cancelled')
      AND finished_at >= now() - interval '1 minute'
    GROUP BY queue_name
), by_queue AS (
    SELECT queue_name,
           sum(jobs) FILTER (WHERE status = 'queued') AS queued,
           sum(jobs) FILTER (WHERE status = 'running') AS running,
           sum(jobs) FILTER (WHERE status = 'retrying') AS retrying,
           sum(jobs) FILTER (WHERE status = 'failed') AS failed,
           array_agg(status::text ORDER BY status) FILTER (WHERE estimated) AS estimated
    FROM counts
    GROUP BY queue_name
)
SELECT queue_name,
       coalesce(by_queue.queued, 0)::bigint AS queued,
       coalesce(by_queue.running, 0)::bigint AS running,
       coalesce(by_queue.retrying, 0)::bigint AS retrying,
       coalesce(by_queue.failed, 0)::bigint AS failed,
       coalesce(by_queue.estimated, '{}') AS estimated,
       now() - due.oldest_due AS oldest_due_age,
       coalesce(finished.finished_last_minute, 0) AS finished_last_minute
FROM by_queue
FULL JOIN due USING (queue_name)
FULL JOIN finished USING (queue_name)
ORDER BY queue_name;

-- name: task_paths
-- Distinct task paths by a loose index scan (one index probe per path), at most %(limit)s::integer.
WITH RECURSIVE paths AS (
    (SELECT task_path FROM leasequeue_job ORDER BY task_path LIMIT 1)
    UNION ALL
    SELECT (SELECT task_path FROM leasequeue_job
            WHERE task_path > paths.task_path ORDER BY task_path LIMIT 1)
    FROM paths
    WHERE paths.task_path IS NOT NULL
)
SELECT task_path FROM paths WHERE task_path IS NOT NULL LIMIT %(limit)s::integer;

-- name: limit_statement_time
-- Cancel any statement of the current transaction that runs longer than the given milliseconds.
SELECT set_config('statement_timeout', %(milliseconds)s::text, true);
