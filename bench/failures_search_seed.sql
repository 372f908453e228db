-- A week of jobs for bench/failures_search.py: 1,000,000 jobs enqueued evenly over the last
-- 7 days (ids time-ordered like uuid7), 95% succeeded, 4% failed (3 attempts each, every error
-- with a traceback of about 1.5 kB: the errors column is TOASTed, as in production), the rest
-- cancelled. 20 tasks, 6 exception classes (120 groups of failures); keyword arguments user_id/order_id/email, and every
-- tenth job a dict among its positional arguments.
TRUNCATE leasequeue_job, leasequeue_dependency, leasequeue_workflow;
INSERT INTO leasequeue_job (id, task_path, queue_name, args, kwargs, status, run_after,
                            enqueued_at, started_at, last_attempted_at, finished_at, attempt,
                            max_attempts, lease_version, errors, last_error_class)
SELECT (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
        || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text || 'x'), 1, 15))::uuid,
       'app.tasks.task_' || ((i / 100) % 20),
       CASE WHEN i % 10 = 3 THEN 'emails' ELSE 'default' END,
       CASE WHEN i % 10 = 0 THEN jsonb_build_array(i, jsonb_build_object('user_id', i % 50000))
            ELSE jsonb_build_array(i) END,
       jsonb_build_object('user_id', i % 50000, 'order_id', i % 70001,
                          'email', 'user' || (i % 50000) || '@example.com'),
       st, ts, ts, ts + interval '1 second', ts + interval '1 second',
       ts + interval '2 seconds',
       CASE WHEN st = 'failed' THEN 3 ELSE 1 END, 3, 1,
       CASE WHEN st = 'failed' THEN (
           SELECT jsonb_agg(jsonb_build_object(
               'attempt', attempt, 'worker_id', 'bench-host:1:w0:abc', 'at', ts,
               'exception_class_path', exc,
               'message', format('%s: upstream said no to job %s (attempt %s)', exc, i, attempt),
               'traceback', repeat(format('  File "app/tasks.py", line %s, in task_%s\n', i % 97,
                                          i % 20), 24)))
           FROM generate_series(1, 3) AS attempt)
        ELSE '[]'::jsonb END,
       CASE WHEN st = 'failed' THEN exc END  -- as the fail statement writes it
FROM (
    SELECT i, ts,
           CASE WHEN i % 100 < 95 THEN 'succeeded'
                WHEN i % 100 < 99 THEN 'failed'
                ELSE 'cancelled' END AS st,
           (ARRAY['builtins.ValueError', 'builtins.KeyError', 'app.errors.PaymentDeclined',
                  'httpx.ConnectTimeout', 'django.db.utils.OperationalError',
                  'django_leasequeue.exceptions.LeaseExpired'])[1 + (i / 2000) % 6] AS exc
    FROM (SELECT i, now() - interval '7 days' + i * interval '604799 milliseconds' / 1000
          AS ts FROM generate_series(1, 1000000) AS i) AS times
) AS seed;
