from importlib import import_module

from django.db import migrations

# claim_batch (sql/jobs.sql), the poll claim (bursts, and workers that find no wakeup), calls
# leasequeue_claim_batch so that it is planned once per connection, as the claim by ids is
# (migration 0020): planned at every poll, a claim of 10 among 50,000 due jobs cost 825-887 µs
# of backend CPU and 1.55-1.62 ms (p50), with the plan cached 587-663 µs and 0.90-1.00 ms.
#
# Its generic plan must be right whatever the table held when it was made, so the statement
# leaves the planner one path, an ordered walk of a claim index that stops at the LIMIT:
# - over every queue, leasequeue_job_claim_plain (sequential and bitmap scans are off, and
#   no other index gives the order);
# - over named queues, one walk per queue of leasequeue_job_queue_claim, the heads merged:
#   written as `queue_name = ANY(queues)`, the array's length is unknown to a generic plan,
#   and no index gives the order over several queues. Within each walk the expiry test is
#   written so that it does not imply leasequeue_job_claim_plain's predicate: a plan made
#   while the table held three jobs took that index, filtered it on the queue, and read all
#   50,000 rows to find a queue's first 10.
# Each walk locks at most the LIMIT (SKIP LOCKED); the rows of a queue's head that the merge
# leaves out stay locked only until the statement commits, as in claim_batch_by_queue.
_0020 = import_module("django_leasequeue.migrations.0020_cached_plans_by_key")

CLAIM_BATCH = rf"""
CREATE FUNCTION leasequeue_claim_batch(queues text[], claim_limit integer, claimer text,
                                       lease_seconds float8)
RETURNS {_0020.ROW_TYPE}
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF queues IS NULL THEN
        RETURN QUERY
{_0020.CLAIM}
        WHERE job.id = ANY(ARRAY(
            SELECT due.id FROM leasequeue_job AS due
            WHERE due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
              AND due.expires_at IS NULL AND due.run_after <= now()
              AND due.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                                     FROM leasequeue_paused_queue AS paused))
            ORDER BY due.priority DESC, due.run_after, due.id
            LIMIT claim_limit
            FOR UPDATE SKIP LOCKED))
{_0020.CLAIMED};
    ELSE
        RETURN QUERY
{_0020.CLAIM}
        WHERE job.id = ANY(ARRAY(
            SELECT head.id FROM (SELECT DISTINCT unnest(queues)) AS open(queue_name)
            CROSS JOIN LATERAL (
                SELECT due.id, due.priority, due.run_after FROM leasequeue_job AS due
                WHERE due.queue_name = open.queue_name
                  AND due.status IN ('queued', 'retrying') AND due.flow_key IS NULL
                  -- expires_at IS NULL, written so that leasequeue_job_claim_plain's predicate
                  -- does not match (see above).
                  AND coalesce(due.expires_at, 'infinity') = 'infinity'
                  AND due.run_after <= now()
                ORDER BY due.priority DESC, due.run_after, due.id
                LIMIT claim_limit
                FOR UPDATE SKIP LOCKED
            ) AS head
            WHERE open.queue_name <> ALL(ARRAY(SELECT paused.queue_name
                                               FROM leasequeue_paused_queue AS paused))
            ORDER BY head.priority DESC, head.run_after, head.id
            LIMIT claim_limit))
{_0020.CLAIMED};
    END IF;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("leasequeue", "0020_cached_plans_by_key"),
    ]

    operations = [
        migrations.RunSQL(
            CLAIM_BATCH,
            "DROP FUNCTION leasequeue_claim_batch(text[], integer, text, float8);",
        )
    ]
