-- leasequeue_complete_many: the fenced completion of a batch of jobs that succeeded
-- (complete_many in sql/jobs.sql): each row still held under its lease version, and running,
-- is marked succeeded with its result; the ids applied are returned.
--
-- A function so that its UPDATE is planned once per connection rather than at every batch:
-- PostgreSQL parses and plans every statement a worker sends (its connections do not prepare
-- statements: PgBouncer before 1.21 cannot carry them), and planning a completion took about
-- 0.2 ms, as long as running it (pg_stat_statements, track_planning, a drain of 5,000 write
-- jobs: 66 µs of planning a job, 77 µs of execution). The generic plan is safe whatever the
-- statistics say, so it is forced rather than left to the plan cache, which would keep
-- planning for each batch size: the batch's rows are found by an index condition on the
-- primary key (`job.id = ANY(ids)`) with sequential scans off (a generic plan made on a
-- nearly empty table otherwise scanned a later backlog whole: see leasequeue_claim_by_ids),
-- and the status test is an expression (`status || ''`) that no partial index matches (the
-- running-jobs index would be read whole: see leasequeue_complete_steps).

CREATE OR REPLACE FUNCTION leasequeue_complete_many(ids uuid[], versions integer[], results jsonb[])
RETURNS SETOF uuid LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    UPDATE leasequeue_job AS job
    SET status = 'succeeded', result = done.result, finished_at = now(), lease_expires_at = NULL
    FROM unnest(ids, versions, results) AS done(id, lease_version, result)
    WHERE job.id = ANY(ids) AND job.id = done.id AND job.lease_version = done.lease_version
      AND job.status || '' = 'running'
    RETURNING job.id;
END $$;
