-- leasequeue_release_children: the release of finished steps' children, shared by the step
-- trigger (leasequeue_step_status_changed, one parent) and leasequeue_complete_steps (a
-- batch): lock the children, probe each for an unfinished parent, and queue it if its run_if
-- holds, else cancel it (a cancel cascades down through the trigger). Returns the children
-- queued and due now, with their queues: a worker may be woken for each once the transaction
-- commits. The parents' dependency rows are settled by the caller, before the call.
--
-- A finished step's children are taken from its own dependency rows (a handful), each probed
-- for an unfinished parent by key before anything else is done for it: looked up the other
-- way round, a big chord's callback was probed by all its parents' rows (child_id), once per
-- finished parent, and a 10,000-member chord drained at a third of the rate of a 2,000-member
-- one. A released step's expiry window moves with it (expires_after counts from when it
-- becomes due).
--
-- The children are locked by key, their ids gathered first. Written as a join (children IN
-- (their dependency rows)), once PL/pgSQL had cached a generic plan for it, the planner, which
-- expects some 300 dependency rows per batch and 150 children, merged them with an ordered
-- scan of the job table's primary key: late in a 10,000-member chord each batch read about
-- 9,800 job rows to lock the callback (5.6 ms), and a chord's fan-in cost per step grew with
-- its size (427 µs a step in one group of 10,000 against 311 in groups of 10).

CREATE OR REPLACE FUNCTION leasequeue_release_children(parent_ids uuid[])
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
    -- By key: written as a join, its generic plan (a PL/pgSQL plan is cached per session)
    -- merged the children with an ordered scan of the whole job table.
    PERFORM 1 FROM leasequeue_job
    WHERE id = ANY(ARRAY(SELECT DISTINCT child_id FROM leasequeue_dependency
                         WHERE parent_id = ANY(parent_ids)))
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
