-- Seeds bench/week_of_jobs.sql's 1,000,000 jobs (7 days, six queues, 30 tasks) into a scratch
-- database for EXPLAIN (see docs/admin.md), each picked up 1 s after it was enqueued and finished
-- 2 s later; a tenth of the running jobs' leases expired, every 50th job a unique key, the
-- succeeded ones a result, the failed ones an error, the running ones progress. Run by psql
-- (\ir: week_of_jobs.sql beside this file).
\ir week_of_jobs.sql
INSERT INTO leasequeue_job (
    id, task_path, queue_name, priority, args, kwargs, backend, status, run_after, enqueued_at,
    started_at, last_attempted_at, finished_at, attempt, max_attempts, backoff_seconds, worker_id,
    worker_ids, lease_version, lease_expires_at, heartbeat_at, cancel_requested, unique_key,
    result, errors, progress)
SELECT
    id, task_path, queue_name, priority, args, kwargs, backend, status, run_after, enqueued_at,
    CASE WHEN st = 'queued' THEN NULL ELSE ts + interval '1 second' END,
    CASE WHEN st = 'queued' THEN NULL ELSE ts + interval '1 second' END,
    CASE WHEN st IN ('succeeded', 'failed', 'cancelled') THEN ts + interval '3 seconds' END,
    attempt, max_attempts, backoff_seconds, worker_id, worker_ids, lease_version,
    CASE WHEN st = 'running' THEN now() + CASE WHEN i % 10 = 0 THEN interval '-20 seconds'
                                               ELSE interval '25 seconds' END END,
    heartbeat_at,
    false,
    CASE WHEN i % 50 = 0 THEN 'key-' || i END,
    CASE WHEN st = 'succeeded' THEN to_jsonb(i) END,
    CASE WHEN st = 'failed' THEN jsonb_build_array(jsonb_build_object(
        'attempt', 3, 'worker_id', 'host-1:1000', 'at', ts,
        'exception_class_path', 'builtins.ValueError', 'message', 'boom',
        'traceback', 'Traceback (most recent call last):\n  ...\nValueError: boom\n'))
         ELSE '[]'::jsonb END,
    CASE WHEN st = 'running' THEN jsonb_build_object('current', 3, 'total', 10, 'message', 'x',
                                                     'at', now()) END
FROM week_of_jobs;
VACUUM ANALYZE leasequeue_job;
