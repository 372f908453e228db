-- Statements at a clock given (clock.py): the testing drain (django_leasequeue.testing) runs the
-- worker's statements at a clock of its own, since inside a test's transaction now() is the
-- transaction's start. Most are derived from their own text (clock.py); here are the clock itself
-- and the one statement whose worker form is a function, which reads the transaction's now().

-- name: drain_clock
-- The drain's clock: the database's wall clock (clock_timestamp(), not the transaction's now()).
SELECT clock_timestamp() AS now;

-- name: claim_by_ids_at_clock
-- claim_by_ids at the drain's clock: leasequeue_claim_by_ids's UPDATE (sql/functions/, which reads the transaction's now()), written out with %(now)s and due by %(due_by)s (tests/unit/test_clock_statements.py holds the two alike).
UPDATE leasequeue_job AS job
SET status = 'running',
    worker_id = %(worker_id)s::text,
    worker_ids = job.worker_ids || to_jsonb(%(worker_id)s::text),
    lease_version = job.lease_version + 1,
    attempt = job.attempt + 1,
    started_at = coalesce(job.started_at, %(now)s::timestamptz),
    last_attempted_at = %(now)s::timestamptz,
    heartbeat_at = %(now)s::timestamptz,
    lease_expires_at = %(now)s::timestamptz + make_interval(secs => %(lease_seconds)s::float8)
WHERE job.id = ANY(%(ids)s::uuid[])
  AND job.status || '' IN ('queued', 'retrying')
  AND job.run_after <= %(due_by)s::timestamptz
  AND (job.flow_key IS NULL OR %(flow_claim)s::boolean)
  AND (job.expires_at IS NULL OR job.expires_at > %(now)s::timestamptz)
  AND job.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                         FROM leasequeue_paused_queue AS paused))
RETURNING {{job.claimed_job_columns}};
