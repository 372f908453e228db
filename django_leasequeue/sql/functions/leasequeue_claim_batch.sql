-- leasequeue_claim_batch: the poll claim (claim_batch in sql/jobs.sql: bursts, and workers
-- that find no wakeup) of every queue (queue NULL) or of one: up to claim_limit due unlimited
-- jobs without an expiry, of no paused queue, in priority order, taken under a new lease
-- (SKIP LOCKED); the rows claimed are returned.
--
-- A function so that it is planned once per connection, as the claim by ids is
-- (leasequeue_claim_by_ids): planned at every poll, a claim of 10 among 50,000 due jobs of one
-- queue cost 825-887 µs of backend CPU and 1.55-1.62 ms (p50), with the plan cached 587-663 µs
-- and 0.90-1.00 ms (a second run: 850-883 against 583-683 µs, the round trip level at
-- 1.25-1.38 ms). A poll of several named queues (claim_batch_of_queues) stays planned at every
-- execution.
--
-- Its generic plan must suit the table whatever it held when the plan was made; an ordered
-- walk of a claim index that stops at the LIMIT is the cheapest plan whatever the statistics
-- (a generic plan takes a LIMIT parameter for a tenth of the rows; sequential and bitmap scans
-- are off):
-- - over every queue, leasequeue_job_claim_plain, which holds no job with an expiry;
-- - over one queue, leasequeue_job_queue_claim, which does: the walk stops after 1000 due rows
--   and keeps those without an expiry, as claim_batch_by_queue does, so that jobs with an
--   expiry ahead of the plain ones (until the sweep sees them and polls read them too) cost a
--   bounded read. Rows are locked as the walk reaches them.
-- Several queues are left to a statement planned at every execution: a draft that walked each
-- named queue and merged the heads, planned while the table held three jobs, walked
-- leasequeue_job_claim_plain filtered on the queue instead: 25,030 rows of a 50,000-job
-- backlog read to claim 10.
--
-- A poll may start at a position (after_priority, after_run_after, after_id; NULL: at the
-- head), that of the last job the worker's last full poll took (runtime/poll_bound.py): higher
-- priorities are walked from the head, the position's own priority from its (run_after, id)
-- on, then the lower ones. While a snapshot is held (a report, a pg_dump, a forgotten BEGIN),
-- every job claimed since leaves an entry at the head of the claim index that no scan can mark
-- dead, and a walk from the head visits the row behind each: polls of a 50,000-job backlog
-- fell from 1,282 to 721 jobs/s across the drain (docs/benchmarks.md). The three walks are arms
-- of one UNION ALL, read in turn and only as far as the LIMIT needs (rows are locked as they
-- are read): from the head, the first arm is the whole walk and the others find nothing at
-- once. The position's own priority is written as a range of one (>= and <=): the btree seeks
-- straight to the position as with an equality, even among jobs of one run_after (a bulk
-- enqueue's), while with "priority =" the planner preferred leasequeue_job_queue_due and a sort.
-- Three statements in a loop cost a poll from a position 104 µs more than one from the head;
-- the arms of one statement, 42-55 µs (round trips over a 50,000-job backlog).
--
-- Its UPDATE ... SET (the claim), its RETURNING and its RETURNS TABLE are
-- leasequeue_claim_by_ids's: change them together.

CREATE OR REPLACE FUNCTION leasequeue_claim_batch(queue text, claim_limit integer, claimer text,
                                       lease_seconds float8, after_priority integer,
                                       after_run_after timestamptz, after_id uuid)
RETURNS TABLE (id uuid, task_path varchar, queue_name varchar, priority smallint,
               backend varchar, args jsonb, kwargs jsonb, attempt integer, max_attempts integer,
               lease_version integer, timeout_seconds float8, backoff_seconds float8,
               checkpoint jsonb, enqueued_at timestamptz, started_at timestamptz,
               last_attempted_at timestamptz, worker_ids jsonb, errors jsonb,
               run_after timestamptz, workflow_id uuid, upstream varchar,
               has_dependents boolean, meta jsonb)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF queue IS NULL THEN
        RETURN QUERY
    UPDATE leasequeue_job AS job
    SET status = 'running',
        worker_id = claimer,
        worker_ids = job.worker_ids || to_jsonb(claimer),
        lease_version = job.lease_version + 1,
        attempt = job.attempt + 1,
        started_at = coalesce(job.started_at, now()),
        last_attempted_at = now(),
        heartbeat_at = now(),
        lease_expires_at = now() + make_interval(secs => lease_seconds)
        WHERE job.id = ANY(ARRAY(
            SELECT arms.id FROM (
                SELECT higher.id FROM (
                    SELECT due.id FROM leasequeue_job AS due
                    WHERE due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                      AND due.expires_at IS NULL AND due.run_after <= now()
                      AND due.priority > coalesce(after_priority, -32769)
                      AND due.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                                             FROM leasequeue_paused_queue AS paused))
                    ORDER BY due.priority DESC, due.run_after, due.id
                    LIMIT claim_limit
                    FOR UPDATE SKIP LOCKED) AS higher
                UNION ALL
                SELECT here.id FROM (
                    SELECT due.id FROM leasequeue_job AS due
                    WHERE due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                      AND due.expires_at IS NULL AND due.run_after <= now()
                      AND due.priority >= after_priority AND due.priority <= after_priority
                      AND (due.run_after, due.id) >= (after_run_after, after_id)
                      AND due.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                                             FROM leasequeue_paused_queue AS paused))
                    ORDER BY due.priority DESC, due.run_after, due.id
                    LIMIT claim_limit
                    FOR UPDATE SKIP LOCKED) AS here
                UNION ALL
                SELECT lower.id FROM (
                    SELECT due.id FROM leasequeue_job AS due
                    WHERE due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                      AND due.expires_at IS NULL AND due.run_after <= now()
                      AND due.priority < after_priority
                      AND due.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                                             FROM leasequeue_paused_queue AS paused))
                    ORDER BY due.priority DESC, due.run_after, due.id
                    LIMIT claim_limit
                    FOR UPDATE SKIP LOCKED) AS lower
            ) AS arms
            LIMIT claim_limit))
    RETURNING job.id, job.task_path, job.queue_name, job.priority, job.backend, job.args,
              job.kwargs, job.attempt, job.max_attempts, job.lease_version,
              job.timeout_seconds, job.backoff_seconds, job.checkpoint, job.enqueued_at,
              job.started_at, job.last_attempted_at, job.worker_ids, job.errors, job.run_after,
              job.workflow_id, job.upstream, job.has_dependents, job.meta;
    ELSE
        RETURN QUERY
    UPDATE leasequeue_job AS job
    SET status = 'running',
        worker_id = claimer,
        worker_ids = job.worker_ids || to_jsonb(claimer),
        lease_version = job.lease_version + 1,
        attempt = job.attempt + 1,
        started_at = coalesce(job.started_at, now()),
        last_attempted_at = now(),
        heartbeat_at = now(),
        lease_expires_at = now() + make_interval(secs => lease_seconds)
        WHERE job.id = ANY(ARRAY(
            -- In the walks' order: nothing between them and the LIMIT reorders their rows.
            SELECT walked.id FROM (
                SELECT higher.id, higher.expires_at FROM (
                    SELECT due.id, due.expires_at FROM leasequeue_job AS due
                    WHERE due.queue_name = queue
                      AND due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                      AND due.run_after <= now()
                      AND due.priority > coalesce(after_priority, -32769)
                      AND queue <> ALL(ARRAY(SELECT paused.queue_name
                                             FROM leasequeue_paused_queue AS paused))
                    ORDER BY due.priority DESC, due.run_after, due.id
                    LIMIT 1000
                    FOR UPDATE SKIP LOCKED) AS higher
                UNION ALL
                SELECT here.id, here.expires_at FROM (
                    SELECT due.id, due.expires_at FROM leasequeue_job AS due
                    WHERE due.queue_name = queue
                      AND due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                      AND due.run_after <= now()
                      AND due.priority >= after_priority AND due.priority <= after_priority
                      AND (due.run_after, due.id) >= (after_run_after, after_id)
                      AND queue <> ALL(ARRAY(SELECT paused.queue_name
                                             FROM leasequeue_paused_queue AS paused))
                    ORDER BY due.priority DESC, due.run_after, due.id
                    LIMIT 1000
                    FOR UPDATE SKIP LOCKED) AS here
                UNION ALL
                SELECT lower.id, lower.expires_at FROM (
                    SELECT due.id, due.expires_at FROM leasequeue_job AS due
                    WHERE due.queue_name = queue
                      AND due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                      AND due.run_after <= now()
                      AND due.priority < after_priority
                      AND queue <> ALL(ARRAY(SELECT paused.queue_name
                                             FROM leasequeue_paused_queue AS paused))
                    ORDER BY due.priority DESC, due.run_after, due.id
                    LIMIT 1000
                    FOR UPDATE SKIP LOCKED) AS lower
            ) AS walked
            WHERE walked.expires_at IS NULL
            LIMIT claim_limit))
    RETURNING job.id, job.task_path, job.queue_name, job.priority, job.backend, job.args,
              job.kwargs, job.attempt, job.max_attempts, job.lease_version,
              job.timeout_seconds, job.backoff_seconds, job.checkpoint, job.enqueued_at,
              job.started_at, job.last_attempted_at, job.worker_ids, job.errors, job.run_after,
              job.workflow_id, job.upstream, job.has_dependents, job.meta;
    END IF;
END $$;
