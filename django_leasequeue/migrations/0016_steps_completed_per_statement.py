from importlib import import_module

from django.db import migrations

# A batch of workflow steps that succeeded is recorded by one call of
# leasequeue_complete_steps, which keeps the books once per batch rather than once per row:
# one counter update per workflow, one settle of the batch's dependency rows, one lock of
# their children, one probe per child. Through the row trigger, each member of a big chord
# updated the workflow's row and locked the callback's row on its own (120 µs per step
# against 57 µs for a plain job, and every worker's completion queued behind the others').
#
# The row trigger stays the one place for every other status change (failures, cancels,
# retries, recovery, expiry, an ORM update): it only skips the rows that
# leasequeue_complete_steps updates itself, told so by a transaction-local setting that is set
# around that one statement.
#
# The release of a finished step's children (lock them, probe each for an unfinished parent,
# queue or cancel it) is leasequeue_release_children, shared by both.
RELEASE_CHILDREN = r"""
CREATE FUNCTION leasequeue_release_children(parent_ids uuid[])
RETURNS TABLE (released_id uuid, released_queue varchar) LANGUAGE plpgsql
-- The probe for an unfinished parent must go through leasequeue_dep_unsettled. Planned on
-- statistics taken just after a big chord was enqueued (autovacuum analyzes a table soon after
-- 10% of it is inserted), where every dependency row is the callback's and unsettled, a
-- sequential scan looks as if it stopped at its first row; it reads every row settled since
-- (0.5 ms per probe with 9,000 of 10,000 settled): a chord's drain would grow with the square
-- of its size.
SET enable_seqscan = off
AS $$
DECLARE
    waiting_id uuid;
    due boolean;
BEGIN
    -- Lock the children in id order. Two parents finishing at once both settle, then one
    -- waits for the other's lock (its workflow's row, which both updated first, or else this
    -- one): once it has it, its probe below (a new statement, a new snapshot) sees the first
    -- one's settled row.
    PERFORM 1 FROM leasequeue_job
    WHERE id IN (SELECT child_id FROM leasequeue_dependency WHERE parent_id = ANY(parent_ids))
    ORDER BY id FOR UPDATE;
    FOR waiting_id IN
        SELECT DISTINCT dependency.child_id FROM leasequeue_dependency AS dependency
        WHERE dependency.parent_id = ANY(parent_ids) ORDER BY dependency.child_id
    LOOP
        -- A parent still unfinished: one probe that stops at the first such row (what
        -- nearly every member of a big group finds, at the cost of an index probe).
        CONTINUE WHEN EXISTS (SELECT 1 FROM leasequeue_dependency AS pending
                              WHERE pending.child_id = waiting_id AND pending.outcome IS NULL);
        UPDATE leasequeue_job AS child
        SET status = CASE WHEN ready.runs THEN 'queued' ELSE 'cancelled' END,
            run_after = greatest(child.run_after, now()),
            -- expires_after counts from when the step becomes due: its window moves with it.
            expires_at = greatest(child.run_after, now()) + (child.expires_at - child.run_after),
            finished_at = CASE WHEN ready.runs THEN NULL ELSE now() END,
            errors = CASE WHEN ready.runs THEN child.errors ELSE child.errors || jsonb_build_array(
                jsonb_build_object(
                    'exception_class_path', 'django_leasequeue.exceptions.UpstreamFailed',
                    'message', ready.reason, 'traceback', '', 'attempt', child.attempt,
                    'worker_id', NULL, 'at', now())) END
        FROM (
            SELECT CASE waiting.run_if
                       WHEN 'finished' THEN true
                       WHEN 'on_complete' THEN true
                       WHEN 'on_failure' THEN unsuccessful.step_name IS NOT NULL
                       ELSE unsuccessful.step_name IS NULL END AS runs,
                   CASE WHEN waiting.run_if = 'on_failure' THEN 'no step of the workflow failed'
                        WHEN unsuccessful.outcome = 'failed'
                        THEN format('upstream step %s failed', unsuccessful.step_name)
                        ELSE format('upstream step %s was cancelled', unsuccessful.step_name)
                   END AS reason
            FROM leasequeue_job AS waiting
            LEFT JOIN LATERAL (
                SELECT parent.step_name, dependency.outcome
                FROM leasequeue_dependency AS dependency
                JOIN leasequeue_job AS parent ON parent.id = dependency.parent_id
                WHERE dependency.child_id = waiting.id
                  AND dependency.outcome IN ('failed', 'cancelled')
                ORDER BY dependency.position
                LIMIT 1
            ) AS unsuccessful ON true
            WHERE waiting.id = waiting_id
        ) AS ready
        WHERE child.id = waiting_id AND child.status = 'waiting'
        RETURNING child.id, child.queue_name, child.status = 'queued' AND child.run_after <= now()
        INTO released_id, released_queue, due;
        IF due THEN
            RETURN NEXT;  -- queued and due now: a worker may be woken for it once this commits
        END IF;
    END LOOP;
END $$;
"""

# 0012's function, its release moved into leasequeue_release_children.
STEP_FUNCTION = r"""
CREATE OR REPLACE FUNCTION leasequeue_step_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was_finished boolean := OLD.status IN ('succeeded', 'failed', 'cancelled');
    is_finished boolean := NEW.status IN ('succeeded', 'failed', 'cancelled');
    was_bad boolean := OLD.status = 'failed'
                       OR (OLD.status = 'cancelled' AND OLD.run_if NOT LIKE 'on\_%');
    is_bad boolean := NEW.status = 'failed'
                      OR (NEW.status = 'cancelled' AND NEW.run_if NOT LIKE 'on\_%');
    unfinished_change integer := was_finished::integer - is_finished::integer;
    failed_change integer := is_bad::integer - was_bad::integer;
BEGIN
    IF unfinished_change <> 0 OR failed_change <> 0 THEN
        UPDATE leasequeue_workflow
        SET steps_unfinished = steps_unfinished + unfinished_change,
            steps_failed = steps_failed + failed_change,
            status = CASE WHEN steps_unfinished + unfinished_change > 0 THEN 'running'
                          WHEN cancel_requested THEN 'cancelled'
                          WHEN steps_failed + failed_change > 0 THEN 'failed'
                          ELSE 'succeeded' END,
            finished_at = CASE WHEN steps_unfinished + unfinished_change > 0 THEN NULL
                               ELSE coalesce(finished_at, now()) END
        WHERE id = NEW.workflow_id;
    END IF;
    IF NOT NEW.has_dependents OR was_finished = is_finished THEN
        RETURN NULL;
    END IF;
    IF is_finished THEN
        UPDATE leasequeue_dependency SET outcome = NEW.status WHERE parent_id = NEW.id;
        PERFORM leasequeue_release_children(ARRAY[NEW.id]);
    ELSE
        UPDATE leasequeue_dependency SET outcome = NULL WHERE parent_id = NEW.id;
        UPDATE leasequeue_job
        SET status = 'waiting', finished_at = NULL
        WHERE id IN (SELECT child_id FROM leasequeue_dependency WHERE parent_id = NEW.id)
          AND status = 'cancelled'
          AND errors -> -1 ->> 'exception_class_path'
              = 'django_leasequeue.exceptions.UpstreamFailed';
    END IF;
    RETURN NULL;
END $$;
"""

# The fenced completion of complete_many, for workflow steps, with the books kept per batch.
# What the trigger does for a step that goes from running to succeeded, set-wise: the
# workflows' counters (one update each), the settled dependency rows, the
# release of the children. Returns the ids completed, and the children released and due now,
# with their queues (what the worker wakes workers for, without another query; steps released
# further down, by a cancel's cascade through the trigger, are left to the sweep's re-signal).
# The workflows' rows are locked as the planner joins them (a nested loop over the few
# workflows of a batch, in id order): were two batches to lock two workflows in opposite
# orders, PostgreSQL would end one of them, and its completions would be recorded one by one.
COMPLETE_STEPS = r"""
CREATE FUNCTION leasequeue_complete_steps(ids uuid[], versions integer[], results jsonb[])
RETURNS TABLE (completed uuid[], released uuid[], released_queues varchar[])
LANGUAGE plpgsql AS $$
DECLARE
    parents uuid[];
BEGIN
    PERFORM set_config('leasequeue.completing_steps', 'on', true);
    WITH done AS (
        UPDATE leasequeue_job AS job
        SET status = 'succeeded', result = done.result, finished_at = now(),
            lease_expires_at = NULL
        FROM unnest(ids, versions, results) AS done(id, lease_version, result)
        WHERE job.id = done.id AND job.lease_version = done.lease_version
          AND job.status = 'running'
        RETURNING job.id, job.workflow_id, job.has_dependents
    ), counted AS (
        UPDATE leasequeue_workflow AS workflow
        SET steps_unfinished = workflow.steps_unfinished - finished.steps,
            status = CASE WHEN workflow.steps_unfinished - finished.steps > 0 THEN 'running'
                          WHEN workflow.cancel_requested THEN 'cancelled'
                          WHEN workflow.steps_failed > 0 THEN 'failed'
                          ELSE 'succeeded' END,
            finished_at = CASE WHEN workflow.steps_unfinished - finished.steps > 0 THEN NULL
                               ELSE coalesce(workflow.finished_at, now()) END
        FROM (SELECT workflow_id, count(*) AS steps FROM done
              WHERE workflow_id IS NOT NULL GROUP BY workflow_id ORDER BY workflow_id)
             AS finished
        WHERE workflow.id = finished.workflow_id
    )
    SELECT coalesce(array_agg(done.id), '{}'), array_agg(done.id) FILTER (WHERE done.has_dependents)
    INTO completed, parents
    FROM done;
    PERFORM set_config('leasequeue.completing_steps', 'off', true);
    IF parents IS NOT NULL THEN
        UPDATE leasequeue_dependency SET outcome = 'succeeded' WHERE parent_id = ANY(parents);
        SELECT array_agg(step.released_id), array_agg(step.released_queue)
        INTO released, released_queues
        FROM leasequeue_release_children(parents) AS step;
    END IF;
    RETURN NEXT;
END $$;
"""

# The trigger fires only when a step's status changes to or from a finished one: a claim,
# a retry's wait, a release (waiting to queued) change nothing it keeps, and a claim of a
# batch of steps no longer calls it once per row.
TRIGGER_SKIPPING_BATCHED_COMPLETIONS = """
DROP TRIGGER leasequeue_step_status_changed ON leasequeue_job;
CREATE TRIGGER leasequeue_step_status_changed AFTER UPDATE OF status ON leasequeue_job
FOR EACH ROW WHEN (NEW.workflow_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
                   AND (OLD.status IN ('succeeded', 'failed', 'cancelled')
                        OR NEW.status IN ('succeeded', 'failed', 'cancelled'))
                   AND current_setting('leasequeue.completing_steps', true)
                       IS DISTINCT FROM 'on')
EXECUTE FUNCTION leasequeue_step_status_changed();
"""
TRIGGER_OF_0009 = """
DROP TRIGGER leasequeue_step_status_changed ON leasequeue_job;
CREATE TRIGGER leasequeue_step_status_changed AFTER UPDATE OF status ON leasequeue_job
FOR EACH ROW WHEN (NEW.workflow_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION leasequeue_step_status_changed();
"""

FORWARD = RELEASE_CHILDREN + STEP_FUNCTION + COMPLETE_STEPS + TRIGGER_SKIPPING_BATCHED_COMPLETIONS
BACKWARD = (
    TRIGGER_OF_0009
    + "DROP FUNCTION leasequeue_complete_steps(uuid[], integer[], jsonb[]);\n"
    + import_module("django_leasequeue.migrations.0012_workflow_fan_in").FAN_IN_FIRST
    + "DROP FUNCTION leasequeue_release_children(uuid[]);\n"
)


class Migration(migrations.Migration):
    dependencies = [
        ("leasequeue", "0015_claim_heads_with_and_without_expiry"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
