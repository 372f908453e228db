-- Flow control. A flow claim is one transaction: flow_candidates takes the limits' locks (and
-- says which it got), flow_usage then reads what those limits use (its snapshot starts after the
-- locks, so every earlier claim under them is visible), then store_rate_buckets records the starts
-- the worker admitted and claim_by_ids (flow_claim) claims them. Locks are transaction-level advisory
-- locks on (1279677507, hashtext(key)): a claimer that cannot take one skips those jobs instead of
-- waiting. The holder may have read their usage before a slot came free, so a claimer that skipped
-- some and has room left claims once more, in a new transaction that first waits for those locks
-- (limit_lock_wait, then wait_for_flow_locks): else a freed slot could stay idle until the next
-- poll.

-- name: flow_candidates
-- Flow claim: the due heads of up to %(partitions)s::integer flow partitions after %(after)s, round-robin, with the locks taken on their limits.
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
        SELECT id, flow_key, queue_name, limits, priority, run_after FROM (
            SELECT id, flow_key, queue_name, limits, priority, run_after, expires_at
            FROM leasequeue_job
            WHERE status IN ('queued', 'retrying') AND flow_key = chosen.flow_key
              AND run_after <= now()
              AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
              AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
            ORDER BY priority DESC, run_after, id
            LIMIT 1000  -- a bounded walk past expired jobs, as in jobs.sql
        ) AS walked
        WHERE walked.expires_at IS NULL OR walked.expires_at > now()
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
-- Flow claim, after another claimer held these limits' locks: wait for each, in one order (no deadlock between two waiters), and hold them until the transaction ends.
SELECT count(pg_advisory_xact_lock(1279677507, lock_key)) AS locked
FROM (SELECT DISTINCT hashtext(key) AS lock_key FROM unnest(%(keys)s::text[]) AS key
      ORDER BY lock_key) AS sorted;

-- name: flow_usage
-- Flow claim and admin: running jobs per concurrency key and per capped queue, each rate bucket's next start, and now().
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
-- Flow claim: the rate buckets' theoretical arrival times after the starts it admitted.
INSERT INTO leasequeue_rate_bucket (key, tat)
SELECT * FROM unnest(%(keys)s::text[], %(tats)s::timestamptz[])
ON CONFLICT (key) DO UPDATE SET tat = excluded.tat;

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
