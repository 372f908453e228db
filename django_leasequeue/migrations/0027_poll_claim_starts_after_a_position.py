# The poll claim may start at a position (issue 39): after a full poll, a worker's next one
# starts at the claim-order position of the last job it took (runtime/poll_bound.py) instead of
# the head of the claim index, where, while a snapshot is held, every job claimed since leaves
# an entry whose row a walk visits: polls of a 50,000-job backlog fell from 1,390 to 785 jobs/s
# across the drain. Higher priorities are still walked from the head, the position's own from
# it on, then the lower ones, as arms of one UNION ALL. What it does and why:
# sql/functions/leasequeue_claim_batch.sql (this is a frozen copy of its text; REVERSE is the
# function as migration 0021 made it).

from django.db import migrations

CLAIM_BATCH = r"""
DROP FUNCTION leasequeue_claim_batch(text, integer, text, float8);

CREATE FUNCTION leasequeue_claim_batch(queue text, claim_limit integer, claimer text,
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
"""

REVERSE = r"""
DROP FUNCTION leasequeue_claim_batch(text, integer, text, float8, integer, timestamptz, uuid);

CREATE FUNCTION leasequeue_claim_batch(queue text, claim_limit integer, claimer text,
                                       lease_seconds float8)
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
            SELECT due.id FROM leasequeue_job AS due
            WHERE due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
              AND due.expires_at IS NULL AND due.run_after <= now()
              AND due.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                                     FROM leasequeue_paused_queue AS paused))
            ORDER BY due.priority DESC, due.run_after, due.id
            LIMIT claim_limit
            FOR UPDATE SKIP LOCKED))
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
            -- In the walk's order: nothing between it and the LIMIT reorders its rows.
            SELECT walked.id FROM (
                SELECT due.id, due.expires_at FROM leasequeue_job AS due
                WHERE due.queue_name = queue
                  AND due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                  AND due.run_after <= now()
                  AND queue <> ALL(ARRAY(SELECT paused.queue_name
                                         FROM leasequeue_paused_queue AS paused))
                ORDER BY due.priority DESC, due.run_after, due.id
                LIMIT 1000
                FOR UPDATE SKIP LOCKED
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
"""


class Migration(migrations.Migration):
    dependencies = [
        ("leasequeue", "0026_estimates_follow_bursts"),
    ]

    operations = [migrations.RunSQL(CLAIM_BATCH, REVERSE)]
