-- Operator actions (django_leasequeue.operations, the admin, backend.cancel) and prunejobs: each one
-- conditional statement, safe while workers run.

-- name: cancel
-- Cancel jobs: waiting/queued/retrying end cancelled at once, running ones get cancel_requested.
UPDATE leasequeue_job
SET status = CASE WHEN status = 'running' THEN status ELSE 'cancelled' END,
    cancel_requested = cancel_requested OR status = 'running',
    finished_at = CASE WHEN status = 'running' THEN finished_at ELSE now() END
WHERE id = ANY(%(ids)s::uuid[]) AND status IN ('waiting', 'queued', 'retrying', 'running')
RETURNING id, status;

-- name: retry
-- Operator: failed/cancelled jobs queued again at once with fresh attempts (an expiry that passed is dropped); the error history stays.
WITH candidates AS (
    SELECT id, task_path, unique_key FROM leasequeue_job AS job
    WHERE id = ANY(%(ids)s::uuid[])
      AND status IN ('failed', 'cancelled')
      -- An unfinished job of the task holding the same unique key wins: queueing this one would
      -- duplicate it.
      AND (unique_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM leasequeue_job AS holder
          WHERE holder.task_path = job.task_path AND holder.unique_key = job.unique_key
            AND holder.status IN ('queued', 'retrying', 'running')))
    FOR UPDATE
), picked AS (
    -- Of several selected jobs of one task sharing a unique key, only the newest is queued again.
    SELECT DISTINCT ON (task_path, coalesce(unique_key, id::text)) id FROM candidates
    ORDER BY task_path, coalesce(unique_key, id::text), id DESC
)
UPDATE leasequeue_job AS job
SET status = 'queued', run_after = now(), attempt = 0, cancel_requested = false,
    started_at = NULL, finished_at = NULL, result = NULL, progress = NULL, worker_id = NULL,
    lease_expires_at = NULL, heartbeat_at = NULL,
    expires_at = CASE WHEN job.expires_at > now() THEN job.expires_at END
FROM picked
WHERE job.id = picked.id
RETURNING job.id, job.queue_name, job.backend;

-- name: force_release
-- Operator: take running jobs from their (dead) worker; the old lease is fenced out, the attempt not counted.
UPDATE leasequeue_job
SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'retrying' END,
    finished_at = CASE WHEN cancel_requested THEN now() END,
    run_after = now(),
    attempt = greatest(attempt - 1, 0),
    lease_version = lease_version + 1,
    lease_expires_at = NULL
WHERE id = ANY(%(ids)s::uuid[]) AND status = 'running'
RETURNING id, status, queue_name, backend;

-- name: delete_jobs
-- Operator: delete jobs no worker holds; a running job must be cancelled or released first, an unfinished workflow step cancelled (its downstream steps would wait for it for ever).
DELETE FROM leasequeue_job
WHERE id = ANY(%(ids)s::uuid[]) AND status <> 'running'
  AND (workflow_id IS NULL OR status IN ('succeeded', 'failed', 'cancelled'))
RETURNING id;

-- name: prune_finished
-- Delete up to %(limit)s jobs that ended (succeeded/failed/cancelled) before the cutoff, except steps of a workflow still running (their outcome decides the steps after them).
DELETE FROM leasequeue_job
WHERE id IN (
    SELECT id FROM leasequeue_job AS job
    WHERE status = ANY(%(statuses)s::text[])
      AND finished_at < now() - make_interval(secs => %(older_than_seconds)s::float8)
      AND NOT EXISTS (SELECT 1 FROM leasequeue_workflow AS workflow
                      WHERE workflow.id = job.workflow_id AND workflow.status = 'running')
    LIMIT %(limit)s::integer
    FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- name: prune_workflows
-- Delete up to %(limit)s workflows that ended before the cutoff and have no steps left (prune_finished took them): nothing refers to them any more.
DELETE FROM leasequeue_workflow
WHERE id IN (
    SELECT id FROM leasequeue_workflow AS workflow
    WHERE status <> 'running'
      AND finished_at < now() - make_interval(secs => %(older_than_seconds)s::float8)
      AND NOT EXISTS (SELECT 1 FROM leasequeue_job WHERE workflow_id = workflow.id)
    LIMIT %(limit)s::integer
    FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- name: count_prunable
-- How many jobs prune_finished would delete (prunejobs' progress in a terminal; the finished index).
SELECT count(*) AS prunable FROM leasequeue_job AS job
WHERE status = ANY(%(statuses)s::text[])
  AND finished_at < now() - make_interval(secs => %(older_than_seconds)s::float8)
  AND NOT EXISTS (SELECT 1 FROM leasequeue_workflow AS workflow
                  WHERE workflow.id = job.workflow_id AND workflow.status = 'running');
