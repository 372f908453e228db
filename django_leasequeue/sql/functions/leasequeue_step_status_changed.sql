-- leasequeue_step_status_changed: the trigger function of every status change of a workflow
-- step but the successes leasequeue_complete_steps records itself, whoever makes it (a
-- worker's fenced failure, the recover sweep, an operator, the expiry sweep, an ORM update);
-- it runs in the same transaction (the trigger is in triggers.sql):
-- 1. the workflow's counters and status follow the step's status;
-- 2. a step that finished settles its dependency rows and releases each child whose parents
--    have all finished (leasequeue_release_children): queued if its run_if holds, else
--    cancelled (which cascades down). The children are locked in id order, so that two parents
--    finishing at once on two workers cannot both miss being the last: the second waits for
--    the first to commit, and its next statement (a new snapshot) sees the first one's settled
--    row;
-- 3. a finished step put back (an operator's retry) unsettles its rows, and the children it had
--    cancelled wait again (which cascades down too).

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
