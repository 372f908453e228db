-- leasequeue_claim_by_ids: the claim of jobs woken by id (claim_by_ids in sql/jobs.sql, the
-- wakeup path, and the flow claim under its locks). A compare-and-swap: each job still
-- claimable and due (unlimited, or also held to limits when flow_claim) and of no paused queue
-- is taken under a new lease; the rows claimed are returned.
--
-- A function so that its UPDATE is planned once per connection, as complete_many's is
-- (leasequeue_complete_many): planned at every claim, claims of one job in blocks of 1,000
-- cost 640 µs of backend CPU each and 1.07 ms of round trip (p50); with the plan cached 375 µs
-- and 0.74 ms. The claim is the largest part of a job's pickup.
--
-- A plan cached for the whole session must be right for a table of any size: a generic plan
-- made while the table was nearly empty joined the ids to a scan of the whole table, and kept
-- doing so once a backlog had arrived, until autovacuum analysed the table (80 ms per batch of
-- 10 among 200,000 rows). The functions that find a batch's rows by key (this one,
-- leasequeue_complete_many, and leasequeue_complete_steps, whose plans PL/pgSQL caches after
-- five calls) therefore look them up by an index condition on the primary key
-- (`id = ANY(ids)`) and run with sequential scans off: the index lookup is then the cheapest
-- path whatever the statistics say.
--
-- Its UPDATE ... SET (the claim) and its RETURNING (the columns of a claimed job) are
-- leasequeue_claim_batch's too, and the RETURNS TABLE names those columns in that order:
-- change them together (tests/unit/test_queries.py holds both to protocol.ClaimedJob).

CREATE OR REPLACE FUNCTION leasequeue_claim_by_ids(ids uuid[], claimer text, lease_seconds float8,
                                        flow_claim boolean)
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
AS $$
#variable_conflict use_column
BEGIN
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
    WHERE job.id = ANY(ids)
      AND job.status || '' IN ('queued', 'retrying')
      AND job.run_after <= now()
      AND (job.flow_key IS NULL OR flow_claim)
      AND (job.expires_at IS NULL OR job.expires_at > now())
      AND job.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                             FROM leasequeue_paused_queue AS paused))
    RETURNING job.id, job.task_path, job.queue_name, job.priority, job.backend, job.args,
              job.kwargs, job.attempt, job.max_attempts, job.lease_version,
              job.timeout_seconds, job.backoff_seconds, job.checkpoint, job.enqueued_at,
              job.started_at, job.last_attempted_at, job.worker_ids, job.errors, job.run_after,
              job.workflow_id, job.upstream, job.has_dependents, job.meta;
END $$;
