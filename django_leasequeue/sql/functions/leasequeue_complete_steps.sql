-- leasequeue_complete_steps: the fenced completion of complete_many, for workflow steps
-- (complete_steps in sql/jobs.sql), with the books kept once per batch rather than once per
-- row: what the step trigger does for a step that goes from running to succeeded, set-wise:
-- one counter update per workflow, one settle of the batch's dependency rows, one lock of
-- their children, one probe per child (leasequeue_release_children). Through the row trigger,
-- each member of a big chord updated the workflow's row and locked the callback's row on its
-- own (120 µs per step against 57 µs for a plain job, and every worker's completion queued
-- behind the others').
--
-- Returns the ids completed, and the children released and due now, with their queues (what
-- the worker wakes workers for, without another query; steps released further down, by a
-- cancel's cascade through the trigger, are left to the sweep's re-signal).
--
-- The row trigger (leasequeue_step_status_changed) skips the rows this function updates
-- itself, told so by the transaction-local setting leasequeue.completing_steps, set around
-- that one statement.
--
-- The workflows' rows are locked as the planner joins them (a nested loop over the few
-- workflows of a batch, in id order): were two batches to lock two workflows in opposite
-- orders, PostgreSQL would end one of them, and its completions would be recorded one by one.
--
-- The batch's rows are found by primary key. The fenced test, written
-- `job.status = 'running'`, let the planner take the running-jobs partial index instead: the
-- cached plan joined the batch to a bitmap scan of that index, which holds an entry for every
-- job claimed since the last vacuum, so each completion read them all (3-5 ms per batch of 10
-- late in a drain of 10,000 steps; the statement's time per step fell from 104 to 63 µs with
-- the test written `job.status || '' = 'running'`). complete_many and heartbeat
-- (sql/jobs.sql) test the status the same way. PL/pgSQL caches its plans after five calls, so
-- the rows are looked up by an index condition on the primary key (`job.id = ANY(ids)`) with
-- sequential scans off, whatever the statistics say (see leasequeue_claim_by_ids).

CREATE OR REPLACE FUNCTION leasequeue_complete_steps(ids uuid[], versions integer[], results jsonb[])
RETURNS TABLE (completed uuid[], released uuid[], released_queues varchar[])
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    parents uuid[];
BEGIN
    PERFORM set_config('leasequeue.completing_steps', 'on', true);
    WITH done AS (
        UPDATE leasequeue_job AS job
        SET status = 'succeeded', result = done.result, finished_at = now(),
            lease_expires_at = NULL
        FROM unnest(ids, versions, results) AS done(id, lease_version, result)
        WHERE job.id = ANY(ids) AND job.id = done.id AND job.lease_version = done.lease_version
          AND job.status || '' = 'running'
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
