-- The triggers on the app's tables, each calling its function of this directory.
--
-- leasequeue_step_status_changed: fires only when a workflow step's status changes to or from
-- a finished one: a claim, a retry's wait, a release (waiting to queued) change nothing it
-- keeps, and a claim of a batch of steps does not call it once per row. It skips the rows
-- leasequeue_complete_steps completes itself (the transaction-local setting
-- leasequeue.completing_steps is on around that statement), whose books that function keeps
-- per batch.

CREATE OR REPLACE TRIGGER leasequeue_step_status_changed AFTER UPDATE OF status ON leasequeue_job
FOR EACH ROW WHEN (NEW.workflow_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
                   AND (OLD.status IN ('succeeded', 'failed', 'cancelled')
                        OR NEW.status IN ('succeeded', 'failed', 'cancelled'))
                   AND current_setting('leasequeue.completing_steps', true)
                       IS DISTINCT FROM 'on')
EXECUTE FUNCTION leasequeue_step_status_changed();
