-- The worker registry (leasequeue_worker): each worker process's row, refreshed on its heartbeat tick.

-- name: worker_beat
-- Registry: insert or refresh a worker process's row (its heartbeat tick; one statement).
INSERT INTO leasequeue_worker (id, host, pid, queues, concurrency, lease_seconds, started_at,
                               heartbeat_at, jobs_running, jobs_done, stopped_at, exit)
VALUES (%(id)s::text, %(host)s::text, %(pid)s::integer, %(queues)s::jsonb,
        %(concurrency)s::integer, %(lease_seconds)s::float8, %(started_at)s::timestamptz, now(),
        %(jobs_running)s::integer, %(jobs_done)s::bigint, NULL, '')
ON CONFLICT (id) DO UPDATE
SET heartbeat_at = now(), jobs_running = excluded.jobs_running, jobs_done = excluded.jobs_done,
    stopped_at = NULL, exit = '';

-- name: worker_stopped
-- Registry: a worker process ended (itself on shutdown, or its supervisor saw it die); kept for retention.
UPDATE leasequeue_worker
SET stopped_at = now(), exit = %(exit)s::text, jobs_running = 0
WHERE id = %(id)s::text AND stopped_at IS NULL
RETURNING id;

-- name: prune_workers
-- Registry: delete the rows of workers stopped or silent for longer than the retention.
DELETE FROM leasequeue_worker
WHERE coalesce(stopped_at, heartbeat_at) < now() - make_interval(secs => %(retention_seconds)s::float8)
RETURNING id;

-- name: workers
-- Registry: every worker row, whether it is alive now (stopped, or no heartbeat within its lease = dead).
SELECT id, host, pid, queues, concurrency, started_at, heartbeat_at, jobs_running, jobs_done,
       stopped_at, exit,
       now() - heartbeat_at AS heartbeat_age,
       stopped_at IS NULL
           AND heartbeat_at >= now() - make_interval(secs => lease_seconds) AS alive
FROM leasequeue_worker
ORDER BY alive DESC, started_at DESC, id;

-- name: workers_alive
-- Metrics: how many worker processes are alive now (not stopped, heartbeat within their lease).
SELECT count(*) AS alive FROM leasequeue_worker
WHERE stopped_at IS NULL AND heartbeat_at >= now() - make_interval(secs => lease_seconds);
