-- The week of jobs that bench/admin_explain_seed.sql and bench/dashboard_seed.sql insert: the
-- temporary view week_of_jobs, one row a job, with the job table's columns on which both seeds
-- agree (each seed writes the others itself: when a job started and finished, its lease, errors).
-- 1,000,000 jobs spread over the last 7 days (ts). Ids are time-ordered like uuid7. Mix (st):
-- 1,500 unfinished jobs at the head, then 95% succeeded, 3.5% failed, 1.5% cancelled; six queues
-- (one tiny), 30 tasks. For the seeds that want them, pickup latencies from 1 ms to 1.5 s
-- (pickup) and run times from 1 ms to 8 s (run).
CREATE OR REPLACE TEMPORARY VIEW week_of_jobs AS
SELECT
    i, ts, st, pickup, run,
    (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
     || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text || 'x'), 1, 15))::uuid AS id,
    'app.tasks.task_' || (i % 30) AS task_path,
    CASE WHEN i % 1000 = 777 THEN 'billing'
         WHEN i % 100 < 60 THEN 'default' WHEN i % 100 < 80 THEN 'emails'
         WHEN i % 100 < 90 THEN 'reports' WHEN i % 100 < 99 THEN 'high' ELSE 'low' END
        AS queue_name,
    (i % 3) - 1 AS priority,
    jsonb_build_array(i, 'x') AS args,
    '{}'::jsonb AS kwargs,
    'default' AS backend,
    st AS status,
    ts AS run_after,
    ts AS enqueued_at,
    CASE WHEN st = 'queued' THEN 0 WHEN st = 'failed' THEN 3 ELSE 1 END AS attempt,
    3 AS max_attempts,
    1.0 AS backoff_seconds,
    CASE WHEN st = 'queued' THEN NULL ELSE 'host-' || (i % 8) || ':' || (1000 + i % 4) END
        AS worker_id,
    CASE WHEN st = 'queued' THEN '[]'::jsonb
         ELSE jsonb_build_array('host-' || (i % 8) || ':' || (1000 + i % 4)) END AS worker_ids,
    CASE WHEN st = 'queued' THEN 0 ELSE 1 END AS lease_version,
    CASE WHEN st = 'running' THEN now() - interval '3 seconds' END AS heartbeat_at
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
