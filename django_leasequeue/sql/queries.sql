-- Every raw SQL statement of the lease protocol. Each one starts with a "-- name: <name>" line and
-- a one-line "-- <description>"; django_leasequeue.sql loads them into QUERIES by name.
-- Parameters use psycopg's %(name)s style, so the same text runs on Django's cursor and on the
-- worker's psycopg AsyncConnection. Every worker write is fenced by (id, lease_version,
-- status = 'running'): zero rows back means the lease was lost and nothing was written.

-- name: enqueue
-- Insert jobs from column arrays in one statement; a unique key an unfinished job holds is skipped.
INSERT INTO leasequeue_job (id, task_path, queue_name, priority, backend, args, kwargs, run_after,
                            max_attempts, timeout_seconds, backoff_seconds, unique_key, limits,
                            flow_key, concurrency_key, pending_key)
SELECT id, task_path, queue_name, priority, backend, args, kwargs, coalesce(run_after, now()),
       max_attempts, timeout_seconds, backoff_seconds, unique_key, limits, flow_key,
       concurrency_key, pending_key
FROM unnest(%(ids)s::uuid[], %(task_paths)s::text[], %(queue_names)s::text[],
            %(priorities)s::smallint[], %(backends)s::text[], %(args)s::jsonb[],
            %(kwargs)s::jsonb[], %(run_afters)s::timestamptz[], %(max_attempts)s::integer[],
            %(timeouts)s::float8[], %(backoffs)s::float8[], %(unique_keys)s::text[],
            %(limits)s::jsonb[], %(flow_keys)s::text[], %(concurrency_keys)s::text[],
            %(pending_keys)s::text[])
     AS new(id, task_path, queue_name, priority, backend, args, kwargs, run_after, max_attempts,
            timeout_seconds, backoff_seconds, unique_key, limits, flow_key, concurrency_key,
            pending_key)
ON CONFLICT (unique_key) WHERE status IN ('queued', 'retrying', 'running') AND unique_key IS NOT NULL
DO NOTHING
RETURNING id, enqueued_at, run_after;

-- name: enqueue_one
-- Insert one job with scalar parameters (cheaper to send than one-element arrays); as enqueue.
INSERT INTO leasequeue_job (id, task_path, queue_name, priority, backend, args, kwargs, run_after,
                            max_attempts, timeout_seconds, backoff_seconds, unique_key, limits,
                            flow_key, concurrency_key, pending_key)
VALUES (%(id)s::uuid, %(task_path)s::text, %(queue_name)s::text, %(priority)s::smallint,
        %(backend)s::text, %(args)s::jsonb, %(kwargs)s::jsonb,
        coalesce(%(run_after)s::timestamptz, now()), %(max_attempts)s::integer,
        %(timeout)s::float8, %(backoff)s::float8, %(unique_key)s::text, %(limits)s::jsonb,
        %(flow_key)s::text, %(concurrency_key)s::text, %(pending_key)s::text)
ON CONFLICT (unique_key) WHERE status IN ('queued', 'retrying', 'running') AND unique_key IS NOT NULL
DO NOTHING
RETURNING id, enqueued_at, run_after;

-- name: database_now
-- The database's clock (transaction time), stamped on rows written with COPY.
SELECT now() AS now;

-- name: copy_jobs
-- Bulk insert of jobs without unique keys (COPY; columns in the order protocol.JobCopy writes them).
COPY leasequeue_job (id, task_path, queue_name, priority, backend, args, kwargs, run_after,
                     enqueued_at, max_attempts, timeout_seconds, backoff_seconds) FROM STDIN;

-- name: claim_by_ids
-- Compare-and-swap claim of these jobs if still claimable and due: unlimited ones (wakeup path), or also limited ones when %(limited)s (the limited claim, under its locks).
UPDATE leasequeue_job
SET status = 'running',
    worker_id = %(worker_id)s::text,
    worker_ids = worker_ids || to_jsonb(%(worker_id)s::text),
    lease_version = lease_version + 1,
    attempt = attempt + 1,
    started_at = coalesce(started_at, now()),
    last_attempted_at = now(),
    heartbeat_at = now(),
    lease_expires_at = now() + make_interval(secs => %(lease_seconds)s::float8)
WHERE id = ANY(%(ids)s::uuid[])
  AND status IN ('queued', 'retrying')
  AND run_after <= now()
  AND (flow_key IS NULL OR %(limited)s::boolean)
RETURNING id, task_path, queue_name, priority, backend, args, kwargs, attempt, max_attempts,
          lease_version, timeout_seconds, backoff_seconds, checkpoint, enqueued_at, started_at,
          last_attempted_at, worker_ids, errors, run_after;

-- name: claim_batch
-- Poll path: claim up to %(limit)s::integer due unlimited jobs of the given queues (NULL = all) in priority order.
WITH picked AS (
    SELECT id FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
      AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
      AND run_after <= now()
    ORDER BY priority DESC, run_after, id
    LIMIT %(limit)s::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE leasequeue_job AS job
SET status = 'running',
    worker_id = %(worker_id)s::text,
    worker_ids = job.worker_ids || to_jsonb(%(worker_id)s::text),
    lease_version = job.lease_version + 1,
    attempt = job.attempt + 1,
    started_at = coalesce(job.started_at, now()),
    last_attempted_at = now(),
    heartbeat_at = now(),
    lease_expires_at = now() + make_interval(secs => %(lease_seconds)s::float8)
FROM picked
WHERE job.id = picked.id
RETURNING job.id, job.task_path, job.queue_name, job.priority, job.backend, job.args, job.kwargs,
          job.attempt, job.max_attempts, job.lease_version, job.timeout_seconds,
          job.backoff_seconds, job.checkpoint, job.enqueued_at, job.started_at,
          job.last_attempted_at, job.worker_ids, job.errors, job.run_after;

-- name: heartbeat
-- Renew every lease a worker holds in one statement; returns those still held, whether renewed, and their cancel flag.
WITH presented AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(versions)s::integer[]) AS held(id, lease_version)
), renewable AS (
    -- A row another transaction holds locked (an operator's action) is skipped, not waited on:
    -- the worker's other leases must not wait for it.
    SELECT job.id FROM leasequeue_job AS job
    JOIN presented ON job.id = presented.id AND job.lease_version = presented.lease_version
    WHERE job.status = 'running'
    ORDER BY job.id
    FOR UPDATE OF job SKIP LOCKED
), renewed AS (
    UPDATE leasequeue_job AS job
    SET heartbeat_at = now(),
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s::float8)
    FROM renewable
    WHERE job.id = renewable.id
    RETURNING job.id, job.cancel_requested
)
SELECT id, cancel_requested, true AS renewed FROM renewed
UNION ALL
SELECT job.id, job.cancel_requested, false AS renewed
FROM leasequeue_job AS job
JOIN presented ON job.id = presented.id AND job.lease_version = presented.lease_version
WHERE job.status = 'running' AND job.id NOT IN (SELECT id FROM renewable);

-- name: complete
-- Fenced: the lease holder records success and the JSON result.
UPDATE leasequeue_job
SET status = 'succeeded', result = %(result)s::jsonb, finished_at = now(), lease_expires_at = NULL
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id;

-- name: complete_many
-- Fenced batch of complete: one statement for many finished jobs; returns those applied.
UPDATE leasequeue_job AS job
SET status = 'succeeded', result = done.result, finished_at = now(), lease_expires_at = NULL
FROM unnest(%(ids)s::uuid[], %(versions)s::integer[], %(results)s::jsonb[])
     AS done(id, lease_version, result)
WHERE job.id = done.id AND job.lease_version = done.lease_version AND job.status = 'running'
RETURNING job.id;

-- name: fail
-- Fenced: record the attempt's error; retry after backoff with jitter, else dead-letter (or cancelled).
UPDATE leasequeue_job
SET status = CASE WHEN cancel_requested THEN 'cancelled'
                  WHEN %(retryable)s::boolean AND attempt < max_attempts THEN 'retrying'
                  ELSE 'failed' END,
    run_after = CASE WHEN %(retryable)s::boolean AND attempt < max_attempts AND NOT cancel_requested
                     THEN now() + make_interval(secs => least(%(backoff_cap_seconds)s::float8,
                              backoff_seconds * power(2, attempt - 1)) * (0.5 + random() / 2))
                     ELSE run_after END,
    finished_at = CASE WHEN %(retryable)s::boolean AND attempt < max_attempts AND NOT cancel_requested
                       THEN NULL ELSE now() END,
    errors = errors || jsonb_build_array(%(error)s::jsonb || jsonb_build_object(
        'attempt', attempt, 'worker_id', worker_id, 'at', now())),
    lease_expires_at = NULL
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id, status, run_after;

-- name: release
-- Fenced: give a job back untouched (graceful shutdown); the attempt and its worker are not counted.
UPDATE leasequeue_job
SET status = 'retrying', run_after = now(), attempt = attempt - 1, lease_expires_at = NULL,
    worker_ids = worker_ids - (jsonb_array_length(worker_ids) - 1)
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id, queue_name;

-- name: finish_cancelled
-- Fenced: the lease holder stopped a job whose cancellation was requested.
UPDATE leasequeue_job
SET status = 'cancelled', finished_at = now(), lease_expires_at = NULL
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id;

-- name: progress
-- Fenced: store the latest progress report of a running job.
UPDATE leasequeue_job
SET progress = jsonb_build_object('current', %(current)s::float8, 'total', %(total)s::float8,
                                  'message', %(message)s::text, 'at', now())
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id;

-- name: checkpoint
-- Fenced: store the JSON state a later attempt resumes from.
UPDATE leasequeue_job
SET checkpoint = %(checkpoint)s::jsonb
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id;

-- name: lock_lease
-- Fenced business writes: lock the job row inside the caller's transaction if the lease is held.
SELECT id FROM leasequeue_job
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
FOR UPDATE;

-- name: job_results
-- Read back: what a TaskResult is built from, for the given job ids.
SELECT id, task_path, queue_name, priority, backend, status, run_after, args, kwargs, result,
       errors, worker_ids, enqueued_at, started_at, last_attempted_at, finished_at
FROM leasequeue_job
WHERE id = ANY(%(ids)s::uuid[]);

-- name: unfinished_by_unique_key
-- Read back: the unfinished jobs holding these unique keys (what a keyed enqueue returns instead).
SELECT id, task_path, queue_name, priority, backend, status, run_after, args, kwargs, result,
       errors, worker_ids, enqueued_at, started_at, last_attempted_at, finished_at, unique_key
FROM leasequeue_job
WHERE unique_key = ANY(%(unique_keys)s::text[]) AND status IN ('queued', 'retrying', 'running');

-- name: job_statuses
-- Read back: each job's status now, and whether an unfinished job holds its unique key.
SELECT id, status,
       unique_key IS NOT NULL AND EXISTS (
           SELECT 1 FROM leasequeue_job AS holder
           WHERE holder.unique_key = job.unique_key AND holder.id <> job.id
             AND holder.status IN ('queued', 'retrying', 'running')) AS key_held
FROM leasequeue_job AS job
WHERE id = ANY(%(ids)s::uuid[]);

-- name: job_progress
-- Read back: what a progress viewer is told about one job (status, progress, attempt).
SELECT id, status, progress, attempt FROM leasequeue_job WHERE id = %(id)s::uuid;

-- name: cancel
-- Cancel jobs: queued/retrying end cancelled at once, running ones get cancel_requested.
UPDATE leasequeue_job
SET status = CASE WHEN status = 'running' THEN status ELSE 'cancelled' END,
    cancel_requested = cancel_requested OR status = 'running',
    finished_at = CASE WHEN status = 'running' THEN finished_at ELSE now() END
WHERE id = ANY(%(ids)s::uuid[]) AND status IN ('queued', 'retrying', 'running')
RETURNING id, status;

-- name: expire_worker_leases
-- Supervisor: end at once the leases of a worker process it saw die; the sweep recovers the jobs.
UPDATE leasequeue_job
SET lease_expires_at = now() - interval '1 millisecond', lease_version = lease_version + 1
WHERE worker_id = %(worker_id)s::text AND status = 'running'
RETURNING id;

-- name: due_by_queue
-- How many jobs are due and unclaimed, per queue (a burst says what it leaves behind).
SELECT queue_name, count(*) AS due FROM leasequeue_job
WHERE status IN ('queued', 'retrying') AND run_after <= now()
GROUP BY queue_name;

-- name: recover_expired
-- Sweep: expired leases become retrying (or failed when attempts are used up, cancelled if asked).
WITH expired AS (
    SELECT id FROM leasequeue_job
    WHERE status = 'running' AND lease_expires_at < now()
    ORDER BY lease_expires_at
    LIMIT %(limit)s::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE leasequeue_job AS job
SET status = CASE WHEN job.cancel_requested THEN 'cancelled'
                  WHEN job.attempt >= job.max_attempts THEN 'failed'
                  ELSE 'retrying' END,
    run_after = CASE WHEN job.cancel_requested OR job.attempt >= job.max_attempts
                     THEN job.run_after
                     ELSE now() + make_interval(secs => least(%(backoff_cap_seconds)s::float8,
                              job.backoff_seconds * power(2, job.attempt - 1))
                              * (0.5 + random() / 2)) END,
    finished_at = CASE WHEN job.cancel_requested OR job.attempt >= job.max_attempts
                       THEN now() ELSE NULL END,
    errors = job.errors || jsonb_build_array(jsonb_build_object(
        'attempt', job.attempt, 'worker_id', job.worker_id, 'at', now(),
        'exception_class_path', 'django_leasequeue.exceptions.LeaseExpired',
        'message', format('Lease expired: worker %%s stopped renewing it (last heartbeat %%s).',
                          job.worker_id, job.heartbeat_at),
        'traceback', '')),
    lease_expires_at = NULL
FROM expired
WHERE job.id = expired.id
RETURNING job.id, job.status, job.queue_name, job.task_path;

-- name: stale_due_jobs
-- Sweep: due unlimited jobs nobody claimed for a while, to get a wakeup again (limited ones wait by design).
SELECT id, queue_name FROM leasequeue_job
WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
  AND run_after <= now() - make_interval(secs => %(older_than_seconds)s::float8)
ORDER BY priority DESC, run_after, id
LIMIT %(limit)s::integer;

-- name: retry
-- Operator: failed/cancelled jobs queued again at once with fresh attempts; the error history stays.
WITH candidates AS (
    SELECT id, unique_key FROM leasequeue_job AS job
    WHERE id = ANY(%(ids)s::uuid[])
      AND status IN ('failed', 'cancelled')
      -- An unfinished job holding the same unique key wins: queueing this one would duplicate it.
      AND (unique_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM leasequeue_job AS holder
          WHERE holder.unique_key = job.unique_key
            AND holder.status IN ('queued', 'retrying', 'running')))
    FOR UPDATE
), picked AS (
    -- Of several selected jobs sharing a unique key, only the newest is queued again.
    SELECT DISTINCT ON (coalesce(unique_key, id::text)) id FROM candidates
    ORDER BY coalesce(unique_key, id::text), id DESC
)
UPDATE leasequeue_job AS job
SET status = 'queued', run_after = now(), attempt = 0, cancel_requested = false,
    started_at = NULL, finished_at = NULL, result = NULL, progress = NULL, worker_id = NULL,
    lease_expires_at = NULL, heartbeat_at = NULL
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
-- Operator: delete jobs no worker holds; a running job must be cancelled or released first.
DELETE FROM leasequeue_job
WHERE id = ANY(%(ids)s::uuid[]) AND status <> 'running'
RETURNING id;

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
), spans AS MATERIALIZED (
    -- The pairs over the cap: the first and last id of their stretch of the index, as positions
    -- (an id's first 64 bits; uuid7 ids start with their enqueue time).
    SELECT capped.status, capped.queue_name, first.pos AS lo, last.pos AS hi
    FROM capped,
         LATERAL (SELECT ('x' || left(replace(job.id::text, '-', ''), 16))::bit(64)::bigint AS pos
                  FROM leasequeue_job AS job
                  WHERE job.status = capped.status AND job.queue_name = capped.queue_name
                    AND job.status <> 'succeeded'
                  ORDER BY job.status, job.queue_name, job.id
                  LIMIT 1) AS first,
         LATERAL (SELECT ('x' || left(replace(job.id::text, '-', ''), 16))::bit(64)::bigint AS pos
                  FROM leasequeue_job AS job
                  WHERE job.status = capped.status AND job.queue_name = capped.queue_name
                    AND job.status <> 'succeeded'
                  ORDER BY job.status DESC, job.queue_name DESC, job.id DESC
                  LIMIT 1) AS last
    WHERE capped.exact >= %(exact_up_to)s::integer
), probes AS (
    -- Cut each stretch into equal slices of ids and read the first few index entries of each:
    -- how densely they follow each other estimates how many the slice holds.
    SELECT slices.status, slices.queue_name, slices.start_pos, slices.end_pos, probe.n,
           probe.first_pos, probe.last_pos
    FROM (SELECT spans.status, spans.queue_name,
                 (spans.lo + (spans.hi::numeric - spans.lo + 1) * slice / %(slices)s::integer)::bigint
                     AS start_pos,
                 (spans.lo + (spans.hi::numeric - spans.lo + 1) * (slice + 1) / %(slices)s::integer)::bigint
                     AS end_pos
          FROM spans, generate_series(0, %(slices)s::integer - 1) AS slice) AS slices,
         LATERAL (
             SELECT count(*) AS n,
                    ('x' || left(replace(min(id::text), '-', ''), 16))::bit(64)::bigint AS first_pos,
                    ('x' || left(replace(max(id::text), '-', ''), 16))::bit(64)::bigint AS last_pos
             FROM (SELECT job.id
                   FROM leasequeue_job AS job
                   WHERE job.status = slices.status AND job.queue_name = slices.queue_name
                     AND job.status <> 'succeeded'
                     AND job.id >= (lpad(to_hex(slices.start_pos), 16, '0') || repeat('0', 16))::uuid
                     AND job.id < (lpad(to_hex(slices.end_pos), 16, '0') || repeat('0', 16))::uuid
                   ORDER BY job.status, job.queue_name, job.id
                   LIMIT %(per_slice)s::integer) AS entries
         ) AS probe
), estimates AS MATERIALIZED (
    SELECT status, queue_name,
           sum(CASE WHEN probe_full AND last_pos > first_pos
                    THEN (n - 1) * (end_pos::numeric - first_pos) / (last_pos - first_pos)
                    ELSE n END) AS estimate
    FROM (SELECT probes.*, n >= %(per_slice)s::integer AS probe_full FROM probes) AS probed
    GROUP BY status, queue_name
), counts AS (
    SELECT status, queue_name, exact >= %(exact_up_to)s::integer AS estimated,
           CASE WHEN exact < %(exact_up_to)s::integer THEN exact
                ELSE greatest(exact, (SELECT round(estimate)::bigint FROM estimates
                                      WHERE estimates.status = capped.status
                                        AND estimates.queue_name = capped.queue_name)) END AS jobs
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

-- name: prune_finished
-- Delete up to %(limit)s jobs that ended (succeeded/failed/cancelled) before the cutoff.
DELETE FROM leasequeue_job
WHERE id IN (
    SELECT id FROM leasequeue_job
    WHERE status = ANY(%(statuses)s::text[])
      AND finished_at < now() - make_interval(secs => %(older_than_seconds)s::float8)
    LIMIT %(limit)s::integer
    FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- Flow control. A limited claim is one transaction: flow_candidates takes the limits' locks (and
-- says which it got), flow_usage then reads what those limits use (its snapshot starts after the
-- locks, so every earlier claim under them is visible), then store_rate_buckets records the starts
-- the worker admitted and claim_by_ids (limited) claims them. Locks are transaction-level advisory locks on (1279677507, hashtext(key)): a claimer
-- that cannot take one skips those jobs instead of waiting. The holder may have read their usage
-- before a slot came free, so a claimer that skipped some and has room left claims once more, in a
-- new transaction that first waits for those locks (limit_lock_wait, then wait_for_flow_locks):
-- else a freed slot could stay idle until the next poll.

-- name: flow_candidates
-- Limited claim: the due heads of up to %(partitions)s::integer flow partitions after %(after)s, round-robin, with the locks taken on their limits.
WITH RECURSIVE partitions AS (
    (SELECT flow_key FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key > %(after)s::text AND run_after <= now()
       AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
     ORDER BY flow_key LIMIT 1)
    UNION ALL
    SELECT (SELECT job.flow_key FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key > partitions.flow_key
              AND job.run_after <= now()
              AND (%(queues)s::text[] IS NULL OR job.queue_name = ANY(%(queues)s::text[]))
            ORDER BY job.flow_key LIMIT 1)
    FROM partitions
    WHERE partitions.flow_key IS NOT NULL
), candidates AS (
    SELECT head.id, head.flow_key, head.queue_name, head.limits, head.priority, head.run_after
    FROM (SELECT flow_key FROM partitions WHERE flow_key IS NOT NULL
          LIMIT %(partitions)s::integer) AS chosen
    CROSS JOIN LATERAL (
        SELECT id, flow_key, queue_name, limits, priority, run_after FROM leasequeue_job
        WHERE status IN ('queued', 'retrying') AND flow_key = chosen.flow_key
          AND run_after <= now()
          AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
        ORDER BY priority DESC, run_after, id
        LIMIT %(per_partition)s::integer
    ) AS head
), locked AS MATERIALIZED (
    SELECT key FROM (SELECT DISTINCT item->>'key' AS key
                     FROM candidates, jsonb_array_elements(candidates.limits) AS item) AS keys
    WHERE pg_try_advisory_xact_lock(1279677507, hashtext(key))
)
SELECT id, flow_key, queue_name, limits::text AS limits,
       coalesce((SELECT array_agg(key) FROM locked), '{}') AS locked_keys
FROM candidates
ORDER BY flow_key, priority DESC, run_after, id;

-- name: limit_lock_wait
-- Fail (LockNotAvailable) any lock wait of the current transaction longer than the given milliseconds.
SELECT set_config('lock_timeout', %(milliseconds)s::text, true);

-- name: wait_for_flow_locks
-- Limited claim, after another claimer held these limits' locks: wait for each, in one order (no deadlock between two waiters), and hold them until the transaction ends.
SELECT count(pg_advisory_xact_lock(1279677507, lock_key)) AS locked
FROM (SELECT DISTINCT hashtext(key) AS lock_key FROM unnest(%(keys)s::text[]) AS key
      ORDER BY lock_key) AS sorted;

-- name: flow_usage
-- Limited claim and admin: running jobs per concurrency key and per capped queue, each rate bucket's next start, and now().
SELECT 'concurrency' AS kind, key,
       (SELECT count(*) FROM leasequeue_job
        WHERE status = 'running' AND concurrency_key = key AND lease_expires_at > now()) AS running,
       NULL::timestamptz AS tat, now() AS now
FROM unnest(%(concurrency_keys)s::text[]) AS key
UNION ALL
SELECT 'queue', queue,
       (SELECT count(*) FROM leasequeue_job
        WHERE status = 'running' AND queue_name = queue AND lease_expires_at > now()),
       NULL, now()
FROM unnest(%(queues)s::text[]) AS queue
UNION ALL
SELECT 'rate', key, NULL, (SELECT tat FROM leasequeue_rate_bucket AS bucket WHERE bucket.key = keys.key),
       now()
FROM unnest(%(rate_keys)s::text[]) AS keys(key);

-- name: store_rate_buckets
-- Limited claim: the rate buckets' theoretical arrival times after the starts it admitted.
INSERT INTO leasequeue_rate_bucket (key, tat)
SELECT * FROM unnest(%(keys)s::text[], %(tats)s::timestamptz[])
ON CONFLICT (key) DO UPDATE SET tat = excluded.tat;

-- name: oldest_due_job
-- Fairness: the unlimited due job waiting longest, whatever its priority (one index probe per priority present).
WITH RECURSIVE priorities AS (
    (SELECT priority FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
     ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key IS NULL
              AND job.priority < priorities.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM priorities
    WHERE priorities.priority IS NOT NULL
)
SELECT head.id FROM priorities
CROSS JOIN LATERAL (
    SELECT id, run_after FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
      AND priority = priorities.priority AND run_after <= now()
      AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
    ORDER BY priority DESC, run_after, id
    LIMIT 1
) AS head
ORDER BY head.run_after, head.id
LIMIT 1;

-- name: lock_pending_keys
-- Backpressure: take (waiting) the enqueue locks of these max_pending keys, held until the caller's transaction ends.
SELECT count(pg_advisory_xact_lock(1279677520, hashtext(key))) AS locked
FROM unnest(%(keys)s::text[]) AS key;

-- name: pending_counts
-- Backpressure: unfinished jobs per max_pending key and per capped queue (read after lock_pending_keys).
SELECT 'task' AS kind, key, (SELECT count(*) FROM leasequeue_job
                            WHERE pending_key = key
                              AND status IN ('queued', 'retrying', 'running')) AS pending
FROM unnest(%(keys)s::text[]) AS key
UNION ALL
SELECT 'queue', queue, (SELECT count(*) FROM leasequeue_job
                        WHERE queue_name = queue AND status IN ('queued', 'retrying', 'running'))
FROM unnest(%(queues)s::text[]) AS queue;

-- name: flow_overview
-- Admin: the busiest flow partitions now, with their running and waiting jobs and the limits of one of them.
SELECT flow_key,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status IN ('queued', 'retrying')) AS waiting,
       (array_agg(limits::text))[1] AS limits
FROM leasequeue_job
WHERE status IN ('queued', 'retrying', 'running') AND flow_key IS NOT NULL
GROUP BY flow_key
ORDER BY count(*) FILTER (WHERE status = 'running') DESC, count(*) DESC, flow_key
LIMIT %(limit)s::integer;
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

-- name: count_prunable
-- How many jobs prune_finished would delete (prunejobs' progress in a terminal; the finished index).
SELECT count(*) AS prunable FROM leasequeue_job
WHERE status = ANY(%(statuses)s::text[])
  AND finished_at < now() - make_interval(secs => %(older_than_seconds)s::float8);
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
    INSERT INTO leasequeue_job (id, task_path, queue_name, priority, backend, args, kwargs,
                                max_attempts, timeout_seconds, backoff_seconds, unique_key,
                                limits, flow_key, concurrency_key, pending_key)
    SELECT %(job_id)s::uuid, %(task_path)s::text, %(queue_name)s::text, %(priority)s::smallint,
           %(backend)s::text, '[]'::jsonb,
           CASE WHEN %(takes_scheduled_at)s::boolean
                THEN jsonb_build_object('scheduled_at', coalesce(%(tick)s::timestamptz, now()))
                ELSE '{}'::jsonb END,
           %(max_attempts)s::integer, %(timeout)s::float8, %(backoff)s::float8,
           %(unique_key)s::text, %(limits)s::jsonb, %(flow_key)s::text,
           %(concurrency_key)s::text, %(pending_key)s::text
    FROM schedule, previous
    WHERE %(enqueue)s::boolean AND NOT (schedule.overlap = 'skip' AND previous.unfinished)
    ON CONFLICT (unique_key) WHERE status IN ('queued', 'retrying', 'running') AND unique_key IS NOT NULL
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
