-- A job's life under its lease: enqueue, claim (wakeup path, poll path, oldest first), heartbeat,
-- the lease holder's writes, and the recover sweep. Every worker write is fenced by (id,
-- lease_version, status = 'running'): zero rows back means the lease was lost and nothing was
-- written.
--
-- Claims skip jobs of paused queues (leasequeue_paused_queue) and jobs past their expires_at.
-- Expiry depends on now(), so no index predicate can leave expired jobs out; a backlog of them
-- ahead of the live ones (an outage longer than their expires_after) must not be walked:
-- - the reads over every queue (claim_batch_with_expiring, oldest_due_job, stale_due_jobs) merge
--   two heads: jobs without an expiry in claim order (leasequeue_job_claim_plain), and jobs with
--   one from each priority's first unexpired row (leasequeue_job_claim_expiring: a range scan
--   from now(), so expired rows are never read; within a priority these go earliest expiry
--   first). Planning that statement costs a poll about 0.3 ms more, so workers poll with
--   claim_batch, the first head alone, while their sweep finds no job with an expiry waiting
--   (expiring_jobs_waiting); jobs with an expiry enqueued since are woken by id meanwhile;
-- - the reads of each open queue's head, while a queue is paused, walk at most 1000 due rows
--   (`walked`) and keep the unexpired ones.
-- The sweep fails expired jobs meanwhile (expire_jobs).
-- The pause test is written `queue_name || '' <> ALL(...)`: as an expression, the planner gives
-- it a default estimate instead of one from queue_name's statistics (with a single queue, any
-- `queue_name <> x` looks as if it kept no row, and the plan would sort the whole backlog).
-- Lookups by id test the status the same way (`status || '' IN (...)`): written plainly, the
-- planner may take it for a claimable-jobs partial index's predicate and walk that index, which
-- it does when the statistics are of a table of finished jobs (where claimable ones look rare)
-- and a backlog has arrived since: claim_by_ids read 10,010 rows to claim 10. The fenced writes
-- of a batch (heartbeat, leasequeue_complete_many, leasequeue_complete_steps) test `status || '' =
-- 'running'` for the same reason: written plainly, they were planned over the running-jobs
-- index, which holds an entry for every job claimed since the last vacuum; a bitmap scan of it
-- reads all of them (in a drain, 3-5 ms per completion of 10 jobs where the primary key takes
-- 0.3 ms).

-- name: enqueue
-- Insert jobs from column arrays in one statement; a unique key an unfinished job of the same task (or, with unique_for, one within its period) holds is skipped.
INSERT INTO leasequeue_job ({{inserted_job_columns}})
SELECT id, task_path, queue_name, priority, backend, args, kwargs, coalesce(run_after, now()),
       max_attempts, timeout_seconds, backoff_seconds, unique_key, limits, flow_key,
       concurrency_key, pending_key,
       coalesce(run_after, now()) + make_interval(secs => expires_after),
       now() + make_interval(secs => unique_for), meta
FROM unnest(%(ids)s::uuid[], %(task_paths)s::text[], %(queue_names)s::text[],
            %(priorities)s::smallint[], %(backends)s::text[], %(args)s::jsonb[],
            %(kwargs)s::jsonb[], %(run_afters)s::timestamptz[], %(max_attempts)s::integer[],
            %(timeouts)s::float8[], %(backoffs)s::float8[], %(unique_keys)s::text[],
            %(limits)s::jsonb[], %(flow_keys)s::text[], %(concurrency_keys)s::text[],
            %(pending_keys)s::text[], %(expires_afters)s::float8[], %(unique_fors)s::float8[],
            %(metas)s::jsonb[])
     AS new(id, task_path, queue_name, priority, backend, args, kwargs, run_after, max_attempts,
            timeout_seconds, backoff_seconds, unique_key, limits, flow_key, concurrency_key,
            pending_key, expires_after, unique_for, meta)
-- unique_for: the caller holds the key's lock (lock_unique_keys), so this sees every holder.
WHERE new.unique_for IS NULL OR NOT EXISTS (
    SELECT 1 FROM leasequeue_job AS holder
    WHERE holder.task_path = new.task_path AND holder.unique_key = new.unique_key
      AND holder.unique_until > now())
ON CONFLICT (task_path, unique_key) WHERE status IN ('queued', 'retrying', 'running') AND unique_key IS NOT NULL
DO NOTHING
RETURNING id, enqueued_at, run_after;

-- name: enqueue_one
-- Insert one job with scalar parameters (cheaper to send than one-element arrays); as enqueue.
INSERT INTO leasequeue_job ({{inserted_job_columns}})
SELECT %(id)s::uuid, %(task_path)s::text, %(queue_name)s::text, %(priority)s::smallint,
       %(backend)s::text, %(args)s::jsonb, %(kwargs)s::jsonb,
       coalesce(%(run_after)s::timestamptz, now()), %(max_attempts)s::integer,
       %(timeout)s::float8, %(backoff)s::float8, %(unique_key)s::text, %(limits)s::jsonb,
       %(flow_key)s::text, %(concurrency_key)s::text, %(pending_key)s::text,
       coalesce(%(run_after)s::timestamptz, now())
           + make_interval(secs => %(expires_after)s::float8),
       now() + make_interval(secs => %(unique_for)s::float8), %(meta)s::jsonb
WHERE %(unique_for)s::float8 IS NULL OR NOT EXISTS (
    SELECT 1 FROM leasequeue_job AS holder
    WHERE holder.task_path = %(task_path)s::text AND holder.unique_key = %(unique_key)s::text
      AND holder.unique_until > now())
ON CONFLICT (task_path, unique_key) WHERE status IN ('queued', 'retrying', 'running') AND unique_key IS NOT NULL
DO NOTHING
RETURNING id, enqueued_at, run_after;

-- name: enqueue_plain
-- Insert one job without a unique key or limits: the common call, in the statement PostgreSQL parses and plans fastest (no arbitration, no NULL columns); as enqueue.
INSERT INTO leasequeue_job ({{plain_job_columns}})
VALUES (%(id)s::uuid, %(task_path)s::text, %(queue_name)s::text, %(priority)s::smallint,
        %(backend)s::text, %(args)s::jsonb, %(kwargs)s::jsonb,
        coalesce(%(run_after)s::timestamptz, now()), %(max_attempts)s::integer,
        %(timeout)s::float8, %(backoff)s::float8,
        coalesce(%(run_after)s::timestamptz, now())
            + make_interval(secs => %(expires_after)s::float8),
        %(meta)s::jsonb)
RETURNING id, enqueued_at;

-- name: enqueue_plain_cached
-- As enqueue_plain, on a plan cached per session (functions/leasequeue_enqueue_plain.sql), for connections that live across requests; returns the job's enqueued_at.
SELECT leasequeue_enqueue_plain(
    %(id)s::uuid, %(task_path)s::text, %(queue_name)s::text, %(priority)s::smallint,
    %(backend)s::text, %(args)s::jsonb, %(kwargs)s::jsonb, %(run_after)s::timestamptz,
    %(max_attempts)s::integer, %(timeout)s::float8, %(backoff)s::float8,
    %(expires_after)s::float8, %(meta)s::jsonb) AS enqueued_at;

-- name: database_now
-- The database's clock (transaction time), stamped on rows written with COPY.
SELECT now() AS now;

-- name: copy_jobs
-- Bulk insert of jobs without unique keys (COPY; columns in the order executor.JobCopy writes them).
COPY leasequeue_job ({{copied_job_columns}})
FROM STDIN;

-- name: claim_by_ids
-- Compare-and-swap claim of these jobs if still claimable and due: unlimited ones (wakeup path), or also ones held to limits when %(flow_claim)s (the flow claim, under its locks); its plan cached (functions/leasequeue_claim_by_ids.sql).
SELECT * FROM leasequeue_claim_by_ids(%(ids)s::uuid[], %(worker_id)s::text,
                                      %(lease_seconds)s::float8, %(flow_claim)s::boolean);

-- name: jobs_present
-- Which of these job ids have a row here, whatever its status: a woken id without one is another project's (it shares the Redis keys) or a deleted job's.
SELECT id FROM leasequeue_job WHERE id = ANY(%(ids)s::uuid[]);

-- name: claim_batch
-- Poll path: claim up to %(limit)s::integer due unlimited jobs without an expiry of one queue (NULL = every queue) in priority order, none of a paused queue, from the head or after a claim-order position (NULL: from the head); its plan cached (functions/leasequeue_claim_batch.sql).
SELECT * FROM leasequeue_claim_batch(%(queue)s::text, %(limit)s::integer, %(worker_id)s::text,
                                     %(lease_seconds)s::float8, %(after_priority)s::integer,
                                     %(after_run_after)s::timestamptz, %(after_id)s::uuid);

-- name: claim_batch_of_queues
-- Poll path of a worker of several queues: as claim_batch, over these queues, planned at every execution.
WITH picked AS (
    SELECT id FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NULL
      AND queue_name = ANY(%(queues)s::text[])
      AND run_after <= now()
      AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
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
RETURNING {{job.claimed_job_columns}};

-- name: claim_batch_with_expiring
-- Poll path while jobs with an expiry wait: as claim_batch, merged with the jobs with an expiry, none past it.
-- Two heads, merged: jobs without an expiry in claim order (leasequeue_job_claim_plain), and
-- jobs with one from each priority's first unexpired row (leasequeue_job_claim_expiring, one
-- probe per priority present), so expired jobs are never read at all.
WITH RECURSIVE expiring_priorities AS (
    (SELECT priority FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NOT NULL
     ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key IS NULL
              AND job.expires_at IS NOT NULL AND job.priority < expiring_priorities.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM expiring_priorities
    WHERE expiring_priorities.priority IS NOT NULL
), candidates AS (
    SELECT * FROM (
        SELECT id, priority, run_after FROM leasequeue_job
        WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NULL
          AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
          AND run_after <= now()
          AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
        ORDER BY priority DESC, run_after, id
        LIMIT %(limit)s::integer
        FOR UPDATE SKIP LOCKED
    ) AS plain
    UNION ALL
    SELECT head.* FROM expiring_priorities
    CROSS JOIN LATERAL (
        SELECT id, priority, run_after FROM leasequeue_job
        WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
          AND priority = expiring_priorities.priority AND expires_at > now()
          AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
          AND run_after <= now()
          AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
        ORDER BY expires_at
        LIMIT %(limit)s::integer
        FOR UPDATE SKIP LOCKED
    ) AS head
), picked AS (
    SELECT id FROM candidates ORDER BY priority DESC, run_after, id LIMIT %(limit)s::integer
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
RETURNING {{job.claimed_job_columns}};

-- name: claim_batch_by_queue
-- Poll path while a queue is paused: as claim_batch, from the heads of these open queues (open_queues), never walking a paused queue's backlog.
WITH picked AS (
    SELECT head.id FROM unnest(%(queues)s::text[]) AS open(queue_name)
    CROSS JOIN LATERAL (
        SELECT id, priority, run_after FROM (
            SELECT id, priority, run_after, expires_at FROM leasequeue_job
            WHERE queue_name = open.queue_name
              AND status IN ('queued', 'retrying') AND flow_key IS NULL
              AND run_after <= now()
            ORDER BY priority DESC, run_after, id
            LIMIT 1000
            FOR UPDATE SKIP LOCKED
        ) AS walked
        WHERE walked.expires_at IS NULL OR walked.expires_at > now()
        LIMIT %(limit)s::integer
    ) AS head
    -- The list may be a moment old: a queue paused since is still refused here.
    WHERE open.queue_name <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
    ORDER BY head.priority DESC, head.run_after, head.id
    LIMIT %(limit)s::integer
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
RETURNING {{job.claimed_job_columns}};

-- name: oldest_due_job
-- Fairness: the unlimited due job waiting longest, whatever its priority, none of a paused queue or past its expiry (one index probe per priority present, on each of claim_batch's two heads), its run_after; jobs without an expiry from %(not_before)s::timestamptz on (NULL: from the head).
-- The bound keeps the probe off the head of leasequeue_job_claim_plain while a snapshot is held:
-- there every job claimed since leaves an entry that no scan can mark dead, and a probe from the
-- head visits the row of each (runtime/fairness.py says where the bound comes from). Rows before
-- it are skipped on the index entries, without a visit.
WITH RECURSIVE plain_priorities AS (
    (SELECT priority FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NULL
       AND run_after >= coalesce(%(not_before)s::timestamptz, '-infinity')
     ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key IS NULL
              AND job.expires_at IS NULL AND job.priority < plain_priorities.priority
              AND job.run_after >= coalesce(%(not_before)s::timestamptz, '-infinity')
            ORDER BY job.priority DESC LIMIT 1)
    FROM plain_priorities
    WHERE plain_priorities.priority IS NOT NULL
), expiring_priorities AS (
    (SELECT priority FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NOT NULL
     ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key IS NULL
              AND job.expires_at IS NOT NULL AND job.priority < expiring_priorities.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM expiring_priorities
    WHERE expiring_priorities.priority IS NOT NULL
)
SELECT head.id, head.run_after FROM plain_priorities
CROSS JOIN LATERAL (
    SELECT id, run_after FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NULL
      AND priority = plain_priorities.priority AND run_after <= now()
      AND run_after >= coalesce(%(not_before)s::timestamptz, '-infinity')
      AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
      AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
    ORDER BY priority DESC, run_after, id
    LIMIT 1
) AS head
UNION ALL
SELECT head.id, head.run_after FROM expiring_priorities
CROSS JOIN LATERAL (
    SELECT id, run_after FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
      AND priority = expiring_priorities.priority AND expires_at > now()
      AND run_after <= now()
      AND (%(queues)s::text[] IS NULL OR queue_name = ANY(%(queues)s::text[]))
      AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
    ORDER BY expires_at
    LIMIT 1
) AS head
ORDER BY run_after, id
LIMIT 1;

-- name: oldest_due_job_by_queue
-- Fairness while a queue is paused: as oldest_due_job, over these open queues (one index probe each), from the head.
SELECT head.id, head.run_after FROM unnest(%(queues)s::text[]) AS open(queue_name)
CROSS JOIN LATERAL (
    SELECT id, run_after FROM (
        SELECT id, run_after, expires_at FROM leasequeue_job
        WHERE queue_name = open.queue_name
          AND status IN ('queued', 'retrying') AND flow_key IS NULL
          AND run_after <= now()
        ORDER BY run_after
        LIMIT 1000
    ) AS walked
    WHERE walked.expires_at IS NULL OR walked.expires_at > now()
    LIMIT 1
) AS head
WHERE open.queue_name <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
ORDER BY head.run_after, head.id
LIMIT 1;

-- name: heartbeat
-- Renew every lease a worker holds in one statement; returns those still held, whether renewed, and their cancel flag.
WITH presented AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(versions)s::integer[]) AS held(id, lease_version)
), renewable AS (
    -- A row another transaction holds locked (an operator's action) is skipped, not waited on:
    -- the worker's other leases must not wait for it.
    SELECT job.id FROM leasequeue_job AS job
    JOIN presented ON job.id = presented.id AND job.lease_version = presented.lease_version
    WHERE job.status || '' = 'running'
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
WHERE job.status || '' = 'running' AND job.id NOT IN (SELECT id FROM renewable);

-- name: complete
-- Fenced: the lease holder records success and the JSON result.
UPDATE leasequeue_job
SET status = 'succeeded', result = %(result)s::jsonb, finished_at = now(), lease_expires_at = NULL
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id;

-- name: complete_many
-- Fenced batch of complete: one statement for many finished jobs, its plan cached (functions/leasequeue_complete_many.sql); returns those applied.
SELECT id FROM leasequeue_complete_many(%(ids)s::uuid[], %(versions)s::integer[], %(results)s::jsonb[])
     AS applied(id);

-- name: complete_steps
-- complete_many for workflow steps, their books kept once per batch (functions/leasequeue_complete_steps.sql); returns the ids completed and the steps released.
SELECT completed, released, released_queues FROM leasequeue_complete_steps(%(ids)s::uuid[], %(versions)s::integer[], %(results)s::jsonb[]);

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
    last_error_class = %(error)s::jsonb ->> 'exception_class_path',
    lease_expires_at = NULL
WHERE id = %(id)s::uuid AND lease_version = %(lease_version)s::integer AND status = 'running'
RETURNING id, status, run_after, expires_at;

-- name: hand_back
-- Fenced: the worker gives a job back untouched (graceful shutdown); the attempt and its worker are not counted.
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

-- name: expire_worker_leases
-- Supervisor: end at once the leases of a worker process it saw die; the sweep recovers the jobs.
UPDATE leasequeue_job
SET lease_expires_at = now() - interval '1 millisecond', lease_version = lease_version + 1
WHERE worker_id = %(worker_id)s::text AND status = 'running'
RETURNING id;

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
    last_error_class = 'django_leasequeue.exceptions.LeaseExpired',
    lease_expires_at = NULL
FROM expired
WHERE job.id = expired.id
RETURNING job.id, job.status, job.queue_name, job.task_path;

-- name: expiring_jobs_waiting
-- Sweep: whether any unlimited job with an expiry waits (one index probe): polls then use claim_batch_with_expiring.
SELECT EXISTS (
    SELECT 1 FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NOT NULL
) AS waiting;

-- name: stale_due_jobs
-- Sweep: due unlimited jobs nobody claimed for a while, to get a wakeup again (limited ones wait by design, paused or expired ones are not woken); claim_batch's two heads, without the locks.
WITH RECURSIVE expiring_priorities AS (
    (SELECT priority FROM leasequeue_job
     WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NOT NULL
     ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT job.priority FROM leasequeue_job AS job
            WHERE job.status IN ('queued', 'retrying') AND job.flow_key IS NULL
              AND job.expires_at IS NOT NULL AND job.priority < expiring_priorities.priority
            ORDER BY job.priority DESC LIMIT 1)
    FROM expiring_priorities
    WHERE expiring_priorities.priority IS NOT NULL
)
SELECT id, queue_name FROM (
    SELECT * FROM (
        SELECT id, queue_name, priority, run_after FROM leasequeue_job
        WHERE status IN ('queued', 'retrying') AND flow_key IS NULL AND expires_at IS NULL
          AND run_after <= now() - make_interval(secs => %(older_than_seconds)s::float8)
          AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
        ORDER BY priority DESC, run_after, id
        LIMIT %(limit)s::integer
    ) AS plain
    UNION ALL
    SELECT head.* FROM expiring_priorities
    CROSS JOIN LATERAL (
        SELECT id, queue_name, priority, run_after FROM leasequeue_job
        WHERE status IN ('queued', 'retrying') AND flow_key IS NULL
          AND priority = expiring_priorities.priority AND expires_at > now()
          AND run_after <= now() - make_interval(secs => %(older_than_seconds)s::float8)
          AND queue_name || '' <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
        ORDER BY expires_at
        LIMIT %(limit)s::integer
    ) AS head
) AS heads
ORDER BY priority DESC, run_after, id
LIMIT %(limit)s::integer;

-- name: stale_due_jobs_by_queue
-- Sweep while a queue is paused: as stale_due_jobs, over these open queues' heads.
SELECT head.id, head.queue_name FROM unnest(%(queues)s::text[]) AS open(queue_name)
CROSS JOIN LATERAL (
    SELECT id, queue_name, priority, run_after FROM (
        SELECT id, queue_name, priority, run_after, expires_at FROM leasequeue_job
        WHERE queue_name = open.queue_name
          AND status IN ('queued', 'retrying') AND flow_key IS NULL
          AND run_after <= now() - make_interval(secs => %(older_than_seconds)s::float8)
        ORDER BY priority DESC, run_after, id
        LIMIT 1000
    ) AS walked
    WHERE walked.expires_at IS NULL OR walked.expires_at > now()
    LIMIT %(limit)s::integer
) AS head
WHERE open.queue_name <> ALL(ARRAY(SELECT queue_name FROM leasequeue_paused_queue))
ORDER BY head.priority DESC, head.run_after, head.id
LIMIT %(limit)s::integer;
