-- The queues' history (leasequeue_queue_history): minutes rolled up from the job table by the
-- workers' recover sweep, merged into 15-minute and hourly spans, read by the admin's dashboard.
--
-- A latency is kept as a histogram, two integer arrays of one length (the buckets in increasing
-- order, and their counts): bucket 0 holds what took less than
-- %(base_ms)s ms, bucket k >= 1 [base * 2^((k-1)/steps), base * 2^(k/steps)) ms, the last one
-- everything above (history/buckets.py). Histograms merge exactly, percentiles would not.

-- name: history_span
-- The minutes the next rollup writes: from the mark (before the first rollup, the first job finished in the last %(keep_seconds)s, else the last minute ended) to the last minute ended %(settle_seconds)s ago, at most %(batch_minutes)s; held: whether this transaction took the rollup's lock.
SELECT pg_try_advisory_xact_lock(hashtext('leasequeue_queue_history')) AS held,
       span.since, least(span.since + make_interval(mins => %(batch_minutes)s::integer),
                         span.closed) AS until,
       span.closed
FROM (SELECT greatest(coalesce((SELECT mark.rolled_up_to
                                FROM leasequeue_queue_history_mark AS mark WHERE mark.id = 1),
                               -- One probe of the finished index per status.
                               date_trunc('minute', least(
                                   (SELECT min(finished_at) FROM leasequeue_job
                                    WHERE status = 'succeeded' AND finished_at >= kept.since),
                                   (SELECT min(finished_at) FROM leasequeue_job
                                    WHERE status = 'failed' AND finished_at >= kept.since),
                                   (SELECT min(finished_at) FROM leasequeue_job
                                    WHERE status = 'cancelled' AND finished_at >= kept.since))),
                               closed.at - interval '1 minute'),
                      kept.since) AS since,
             closed.at AS closed
      FROM (SELECT date_trunc('minute', now())
                       - make_interval(secs => %(keep_seconds)s::float8) AS since) AS kept,
           (SELECT date_trunc('minute', now() - make_interval(secs => %(settle_seconds)s::float8))
                       AS at) AS closed) AS span;

-- name: history_mark
-- How far the history is rolled up (NULL before the first rollup), and the database's now().
SELECT (SELECT rolled_up_to FROM leasequeue_queue_history_mark WHERE id = 1) AS rolled_up_to,
       now() AS now;

-- name: history_minutes
-- Per queue and minute of [since, until), from the job table: jobs finished (succeeded, failed), the pickup histogram (claims made then) and the run time histogram (jobs finished then).
WITH finished AS (
    SELECT job.queue_name, date_trunc('minute', job.finished_at) AS minute, job.status,
           job.finished_at - job.last_attempted_at AS run_time
    FROM leasequeue_job AS job
    WHERE job.status IN ('succeeded', 'failed')
      AND job.finished_at >= %(since)s::timestamptz AND job.finished_at < %(until)s::timestamptz
), counts AS (
    SELECT queue_name, minute,
           count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE status = 'failed') AS failed
    FROM finished
    GROUP BY queue_name, minute
), samples AS (
    SELECT queue_name, minute, 'run' AS kind, run_time AS latency
    FROM finished
    WHERE run_time IS NOT NULL
    UNION ALL
    -- The claims made in [since, until) that the table still shows (a job keeps its last
    -- claim only): of jobs that ended within the hour after, and of jobs running now.
    SELECT job.queue_name, date_trunc('minute', job.last_attempted_at), 'pickup',
           job.last_attempted_at - job.run_after
    FROM leasequeue_job AS job
    WHERE job.status IN ('succeeded', 'failed', 'cancelled')
      AND job.finished_at >= %(since)s::timestamptz
      AND job.finished_at < %(until)s::timestamptz + interval '1 hour'
      AND job.last_attempted_at >= %(since)s::timestamptz
      AND job.last_attempted_at < %(until)s::timestamptz
    UNION ALL
    SELECT job.queue_name, date_trunc('minute', job.last_attempted_at), 'pickup',
           job.last_attempted_at - job.run_after
    FROM leasequeue_job AS job
    WHERE job.status = 'running'
      AND job.last_attempted_at >= %(since)s::timestamptz
      AND job.last_attempted_at < %(until)s::timestamptz
), bucketed AS (
    SELECT queue_name, minute, kind,
           CASE WHEN ms < %(base_ms)s::float8 THEN 0
                ELSE least(%(last_bucket)s::integer,
                           1 + floor(ln(ms / %(base_ms)s::float8) / ln(2)
                                     * %(steps)s::integer)::integer) END AS bucket,
           count(*) AS n
    FROM (SELECT queue_name, minute, kind,
                 greatest(extract(epoch FROM latency)::float8 * 1000, 0) AS ms
          FROM samples) AS timed
    GROUP BY queue_name, minute, kind, bucket
), histograms AS (
    SELECT queue_name, minute,
           array_agg(bucket ORDER BY bucket) FILTER (WHERE kind = 'pickup') AS pickup_buckets,
           array_agg(n::integer ORDER BY bucket) FILTER (WHERE kind = 'pickup') AS pickup_counts,
           array_agg(bucket ORDER BY bucket) FILTER (WHERE kind = 'run') AS run_buckets,
           array_agg(n::integer ORDER BY bucket) FILTER (WHERE kind = 'run') AS run_counts
    FROM bucketed
    GROUP BY queue_name, minute
)
SELECT queue_name, minute AS start,
       coalesce(counts.succeeded, 0)::integer AS succeeded,
       coalesce(counts.failed, 0)::integer AS failed,
       coalesce(histograms.pickup_buckets, '{}') AS pickup_buckets,
       coalesce(histograms.pickup_counts, '{}') AS pickup_counts,
       coalesce(histograms.run_buckets, '{}') AS run_buckets,
       coalesce(histograms.run_counts, '{}') AS run_counts
FROM counts
FULL JOIN histograms USING (queue_name, minute)
ORDER BY start, queue_name;

-- name: due_backlog
-- Per queue with jobs waiting: how many are due and not started (queued or retrying, run_after passed), exact up to %(exact_up_to)s, estimated above it from probes of the status_queue index.
WITH RECURSIVE queues AS (
    -- Loose index scan of leasequeue_job_queue_due: one probe per queue with waiting jobs.
    (SELECT queue_name FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') ORDER BY queue_name LIMIT 1)
    UNION ALL
    SELECT next.queue_name FROM queues, LATERAL (
        SELECT queue_name FROM leasequeue_job
        WHERE status IN ('queued', 'retrying') AND queue_name > queues.queue_name
        ORDER BY queue_name LIMIT 1) AS next
), capped AS MATERIALIZED (
    SELECT queues.queue_name,
           (SELECT count(*) FROM (
                SELECT 1 FROM leasequeue_job AS job
                WHERE job.status IN ('queued', 'retrying') AND job.queue_name = queues.queue_name
                  AND job.run_after <= now()
                ORDER BY job.queue_name, job.run_after
                LIMIT %(exact_up_to)s::integer + 1) AS due) AS exact
    FROM queues
), estimates AS (
    -- Over the cap: each waiting status's due entries, estimated from a bounded number of probes
    -- of the status_queue index (leasequeue_estimate_entries, sql/functions/), as the queue
    -- summary estimates its counts.
    SELECT capped.queue_name,
           sum(leasequeue_estimate_entries(waiting.status, capped.queue_name,
                                           %(slices)s::integer, %(per_probe)s::integer,
                                           %(chain)s::integer, true)) AS estimate
    FROM capped
    CROSS JOIN (VALUES ('queued'), ('retrying')) AS waiting(status)
    WHERE capped.exact > %(exact_up_to)s::integer
    GROUP BY capped.queue_name
)
SELECT capped.queue_name, capped.exact > %(exact_up_to)s::integer AS estimated,
       CASE WHEN capped.exact <= %(exact_up_to)s::integer THEN capped.exact
            ELSE greatest(capped.exact, round(estimates.estimate)::bigint) END AS backlog
FROM capped
LEFT JOIN estimates USING (queue_name)
WHERE capped.exact > 0
ORDER BY capped.queue_name;

-- name: store_history_minutes
-- Write rolled-up minutes (a minute already written stays as it is: concurrent sweeps count it once) and move the mark forward to %(until)s.
WITH stored AS (
    -- Each histogram's arrays come as text ('{3,5}'): arrays of different lengths cannot
    -- form one two-dimensional parameter.
    INSERT INTO leasequeue_queue_history (seconds, start, queue_name, succeeded, failed,
                                          pickup_buckets, pickup_counts, run_buckets,
                                          run_counts, backlog, backlog_estimated)
    SELECT 60, minute.start, minute.queue_name, minute.succeeded, minute.failed,
           minute.pickup_buckets::integer[], minute.pickup_counts::integer[],
           minute.run_buckets::integer[], minute.run_counts::integer[], minute.backlog,
           minute.backlog_estimated
    FROM unnest(%(starts)s::timestamptz[], %(queue_names)s::text[], %(succeeded)s::integer[],
                %(failed)s::integer[], %(pickup_buckets)s::text[], %(pickup_counts)s::text[],
                %(run_buckets)s::text[], %(run_counts)s::text[], %(backlogs)s::bigint[],
                %(backlogs_estimated)s::boolean[])
         AS minute(start, queue_name, succeeded, failed, pickup_buckets, pickup_counts,
                   run_buckets, run_counts, backlog, backlog_estimated)
    ON CONFLICT (seconds, start, queue_name) DO NOTHING
    RETURNING 1
), marked AS (
    INSERT INTO leasequeue_queue_history_mark AS mark (id, rolled_up_to)
    VALUES (1, %(until)s::timestamptz)
    ON CONFLICT (id) DO UPDATE
        SET rolled_up_to = greatest(mark.rolled_up_to, excluded.rolled_up_to)
    RETURNING mark.rolled_up_to
)
SELECT (SELECT count(*) FROM stored) AS stored, (SELECT rolled_up_to FROM marked) AS rolled_up_to;

-- name: merge_history_spans
-- Merge the minutes of every span of %(spans)s seconds that ended in [since, until) into one row per queue: counts summed, histograms merged, the backlog of the span's last minute measured (0 for a queue without a row then).
WITH spans AS (
    SELECT span.seconds,
           to_timestamp(floor(extract(epoch FROM %(since)s::timestamptz) / span.seconds)
                        * span.seconds) AS first_start,
           to_timestamp(floor(extract(epoch FROM %(until)s::timestamptz) / span.seconds)
                        * span.seconds) AS end_before
    FROM unnest(%(spans)s::integer[]) AS span(seconds)
), minutes AS (
    SELECT spans.seconds,
           to_timestamp(floor(extract(epoch FROM history.start) / spans.seconds) * spans.seconds)
               AS span_start,
           history.start, history.queue_name, history.succeeded, history.failed,
           history.pickup_buckets, history.pickup_counts, history.run_buckets,
           history.run_counts, history.backlog, history.backlog_estimated
    FROM spans
    JOIN leasequeue_queue_history AS history
      ON history.seconds = 60
     AND history.start >= spans.first_start AND history.start < spans.end_before
), measured AS (
    SELECT seconds, span_start, max(start) FILTER (WHERE backlog IS NOT NULL) AS at
    FROM minutes
    GROUP BY seconds, span_start
), counts AS (
    SELECT minutes.seconds, minutes.span_start, minutes.queue_name,
           sum(minutes.succeeded)::integer AS succeeded, sum(minutes.failed)::integer AS failed,
           CASE WHEN measured.at IS NOT NULL
                THEN coalesce(max(minutes.backlog) FILTER (WHERE minutes.start = measured.at), 0)
           END AS backlog,
           coalesce(bool_or(minutes.backlog_estimated)
                        FILTER (WHERE minutes.start = measured.at), false) AS backlog_estimated
    FROM minutes
    JOIN measured USING (seconds, span_start)
    GROUP BY minutes.seconds, minutes.span_start, minutes.queue_name, measured.at
), entries AS (
    SELECT minutes.seconds, minutes.span_start, minutes.queue_name, 'pickup' AS kind,
           entry.bucket, sum(entry.n)::integer AS n
    FROM minutes, unnest(minutes.pickup_buckets, minutes.pickup_counts) AS entry(bucket, n)
    GROUP BY 1, 2, 3, 4, 5
    UNION ALL
    SELECT minutes.seconds, minutes.span_start, minutes.queue_name, 'run',
           entry.bucket, sum(entry.n)::integer
    FROM minutes, unnest(minutes.run_buckets, minutes.run_counts) AS entry(bucket, n)
    GROUP BY 1, 2, 3, 4, 5
), histograms AS (
    SELECT seconds, span_start, queue_name,
           array_agg(bucket ORDER BY bucket) FILTER (WHERE kind = 'pickup') AS pickup_buckets,
           array_agg(n ORDER BY bucket) FILTER (WHERE kind = 'pickup') AS pickup_counts,
           array_agg(bucket ORDER BY bucket) FILTER (WHERE kind = 'run') AS run_buckets,
           array_agg(n ORDER BY bucket) FILTER (WHERE kind = 'run') AS run_counts
    FROM entries
    GROUP BY seconds, span_start, queue_name
), stored AS (
    INSERT INTO leasequeue_queue_history (seconds, start, queue_name, succeeded, failed,
                                          pickup_buckets, pickup_counts, run_buckets,
                                          run_counts, backlog, backlog_estimated)
    SELECT counts.seconds, counts.span_start, counts.queue_name, counts.succeeded,
           counts.failed, coalesce(histograms.pickup_buckets, '{}'),
           coalesce(histograms.pickup_counts, '{}'), coalesce(histograms.run_buckets, '{}'),
           coalesce(histograms.run_counts, '{}'), counts.backlog, counts.backlog_estimated
    FROM counts
    LEFT JOIN histograms USING (seconds, span_start, queue_name)
    ON CONFLICT (seconds, start, queue_name) DO NOTHING
    RETURNING 1
)
SELECT count(*) AS stored FROM stored;

-- name: prune_history
-- Delete history rows that started more than %(keep_seconds)s ago, at most %(limit)s of them.
DELETE FROM leasequeue_queue_history
WHERE id IN (SELECT id FROM leasequeue_queue_history
             WHERE seconds = ANY(%(spans)s::integer[])
               AND start < now() - make_interval(secs => %(keep_seconds)s::float8)
             LIMIT %(limit)s::integer);

-- name: history_rows
-- The dashboard's stored history: rows of %(seconds)s seconds starting in [since, split), minutes in [split, until).
SELECT seconds, start, queue_name, succeeded, failed, pickup_buckets, pickup_counts, run_buckets,
       run_counts, backlog, backlog_estimated
FROM leasequeue_queue_history
WHERE (seconds = %(seconds)s::integer
       AND start >= %(since)s::timestamptz AND start < %(split)s::timestamptz)
   OR (seconds = 60
       AND start >= greatest(%(split)s::timestamptz, %(since)s::timestamptz)
       AND start < %(until)s::timestamptz)
ORDER BY start, queue_name;
