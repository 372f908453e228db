-- Seeds bench/week_of_jobs.sql's 1,000,000 jobs (7 days, six queues, 30 tasks) for
-- bench/dashboard.py, which creates that view first. Pickup latencies spread from 1 ms to 1.5 s
-- and run times from 1 ms to 8 s, so that each minute's histograms hold as many buckets as a real
-- queue's.
INSERT INTO leasequeue_job (
    id, task_path, queue_name, priority, args, kwargs, backend, status, run_after, enqueued_at,
    started_at, last_attempted_at, finished_at, attempt, max_attempts, backoff_seconds,
    worker_id, worker_ids, lease_version, lease_expires_at, heartbeat_at, errors)
SELECT
    id, task_path, queue_name, priority, args, kwargs, backend, status, run_after, enqueued_at,
    CASE WHEN st = 'queued' THEN NULL ELSE ts + pickup END,
    CASE WHEN st = 'queued' THEN NULL ELSE ts + pickup END,
    CASE WHEN st IN ('succeeded', 'failed', 'cancelled') THEN ts + pickup + run END,
    attempt, max_attempts, backoff_seconds, worker_id, worker_ids, lease_version,
    CASE WHEN st = 'running' THEN now() + interval '25 seconds' END,
    heartbeat_at,
    '[]'::jsonb
FROM week_of_jobs;
