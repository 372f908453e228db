-- A big backlog for bench/queue_summary.py: 1,000,000 queued jobs (three queues, one tiny,
-- 2% due only tomorrow), 300 running, 2,000 retrying, 5,000 failed and 200,000 succeeded
-- over the last day. Ids are time-ordered like uuid7.
TRUNCATE leasequeue_job, leasequeue_dependency, leasequeue_workflow;
INSERT INTO leasequeue_job (id, task_path, queue_name, args, kwargs, status, run_after,
                            enqueued_at, started_at, finished_at, attempt, worker_id,
                            lease_version, lease_expires_at, heartbeat_at)
SELECT (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
        || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text || 'x'), 1, 15))::uuid,
       'app.tasks.task_' || (i % 20),
       CASE WHEN i % 1000 = 7 THEN 'billing' WHEN i % 10 = 3 THEN 'emails' ELSE 'default' END,
       jsonb_build_array(i), '{}'::jsonb, st,
       CASE WHEN st = 'queued' AND i % 50 = 1 THEN now() + interval '1 day' ELSE ts END,
       ts,
       CASE WHEN st <> 'queued' THEN ts END,
       CASE WHEN st IN ('succeeded', 'failed') THEN ts + interval '1 second' END,
       CASE WHEN st = 'queued' THEN 0 ELSE 1 END,
       CASE WHEN st = 'running' THEN 'bench-host:1:w0:abc' END,
       CASE WHEN st = 'queued' THEN 0 ELSE 1 END,
       CASE WHEN st = 'running' THEN now() + interval '30 seconds' END,
       CASE WHEN st = 'running' THEN now() END
FROM (
    SELECT i, now() - interval '1 day' + i * interval '70 milliseconds' AS ts,
           CASE WHEN i <= 200000 THEN 'succeeded'
                WHEN i <= 205000 THEN 'failed'
                WHEN i <= 207000 THEN 'retrying'
                WHEN i <= 207300 THEN 'running'
                ELSE 'queued' END AS st
    FROM generate_series(1, 1207300) AS i
) AS seed;
