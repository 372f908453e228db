-- Seeds 1,000,000 jobs spread over the last 7 days for bench/dashboard.py. Ids are time-ordered
-- like uuid7. Mix: 1,500 unfinished jobs at the head, then 95% succeeded, 3.5% failed, 1.5%
-- cancelled; six queues (one tiny), 30 tasks. Pickup latencies spread from 1 ms to 1.5 s and run
-- times from 1 ms to 8 s, so that each minute's histograms hold as many buckets as a real
-- queue's.
INSERT INTO leasequeue_job (
    id, task_path, queue_name, priority, args, kwargs, backend, status, run_after, enqueued_at,
    started_at, last_attempted_at, finished_at, attempt, max_attempts, backoff_seconds,
    worker_id, worker_ids, lease_version, lease_expires_at, heartbeat_at, errors)
SELECT
    (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
     || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text || 'x'), 1, 15))::uuid,
    'app.tasks.task_' || (i % 30),
    CASE WHEN i % 1000 = 777 THEN 'billing'
         WHEN i % 100 < 60 THEN 'default' WHEN i % 100 < 80 THEN 'emails'
         WHEN i % 100 < 90 THEN 'reports' WHEN i % 100 < 99 THEN 'high' ELSE 'low' END,
    (i % 3) - 1,
    jsonb_build_array(i, 'x'),
    '{}'::jsonb,
    'default',
    st,
    ts,
    ts,
    CASE WHEN st = 'queued' THEN NULL ELSE ts + pickup END,
    CASE WHEN st = 'queued' THEN NULL ELSE ts + pickup END,
    CASE WHEN st IN ('succeeded', 'failed', 'cancelled') THEN ts + pickup + run END,
    CASE WHEN st = 'queued' THEN 0 WHEN st = 'failed' THEN 3 ELSE 1 END,
    3,
    1.0,
    CASE WHEN st = 'queued' THEN NULL ELSE 'host-' || (i % 8) || ':' || (1000 + i % 4) END,
    CASE WHEN st = 'queued' THEN '[]'::jsonb
         ELSE jsonb_build_array('host-' || (i % 8) || ':' || (1000 + i % 4)) END,
    CASE WHEN st = 'queued' THEN 0 ELSE 1 END,
    CASE WHEN st = 'running' THEN now() + interval '25 seconds' END,
    CASE WHEN st = 'running' THEN now() - interval '3 seconds' END,
    '[]'::jsonb
FROM (
    SELECT i, now() - interval '7 days' + i * interval '604 milliseconds' AS ts,
           make_interval(secs => 0.001 + power((i::bigint * 7919) % 1000 / 1000.0, 3) * 1.5) AS pickup,
           make_interval(secs => 0.001 + power((i::bigint * 104729) % 1000 / 1000.0, 4) * 8) AS run,
           CASE WHEN i > 998500 THEN (ARRAY['queued', 'queued', 'running', 'retrying'])[1 + i % 4]
                WHEN i % 1000 < 35 THEN 'failed'
                WHEN i % 1000 < 50 THEN 'cancelled'
                ELSE 'succeeded' END AS st
    FROM generate_series(1, 1000000) AS i
) AS seed;
