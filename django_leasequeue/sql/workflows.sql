-- Workflows: a workflow's rows written at enqueue (COPY), what a step reads of its upstream
-- steps, the steps a finished one released, and an operator's cancel. Releasing a step is not
-- here: the database does it (sql/functions/), in the transaction that records its last
-- parent's outcome, whoever writes that: leasequeue_complete_steps for a worker's batch of
-- successes, the trigger leasequeue_step_status_changed for every other change.

-- name: insert_workflow
-- One workflow row; its steps are copied next, in the same transaction.
INSERT INTO leasequeue_workflow (id, name, backend, steps_total, steps_unfinished)
VALUES (%(id)s::uuid, %(workflow_name)s::text, %(backend)s::text, %(steps)s::integer,
        %(steps)s::integer)
RETURNING created_at;

-- name: copy_steps
-- Bulk insert of a workflow's steps (COPY; columns in the order workflows.enqueue writes them).
COPY leasequeue_job ({{copied_step_columns}}) FROM STDIN;

-- name: copy_dependencies
-- Bulk insert of a workflow's dependency rows (COPY: parent, child, the parent's position).
COPY leasequeue_dependency (parent_id, child_id, position) FROM STDIN;

-- name: upstream_results
-- A step's direct upstream steps in order, with their results (JSON text) and statuses.
SELECT parent.step_name, parent.result::text AS result, parent.status
FROM leasequeue_dependency AS dependency
JOIN leasequeue_job AS parent ON parent.id = dependency.parent_id
WHERE dependency.child_id = %(id)s::uuid
ORDER BY dependency.position;

-- name: released_steps
-- Due steps downstream of these finished ones: what to wake workers for once they commit.
-- From the finished steps' own dependency rows, each child looked up by its key alone (OFFSET 0
-- keeps its status test out of the lookup): planned on the statistics of a table that was just
-- filled, `id = ... AND status = 'queued'` walked the claimable jobs' partial index instead
-- (1.8 ms per call while a 10,000-member chord drained), and a join scanned every queued job.
SELECT child.id, child.queue_name
FROM (SELECT DISTINCT child_id FROM leasequeue_dependency
      WHERE parent_id = ANY(%(ids)s::uuid[])) AS released
CROSS JOIN LATERAL (
    SELECT id, queue_name, status, run_after FROM leasequeue_job
    WHERE id = released.child_id
    OFFSET 0
) AS child
WHERE child.status = 'queued' AND child.run_after <= now();

-- name: lock_running_steps
-- Operator: a workflow's running steps locked in id order before its row is, the order a worker's completion takes them in (its steps, then the workflow), so that a cancel racing a completion waits for it instead of deadlocking.
SELECT id FROM leasequeue_job
WHERE workflow_id = %(id)s::uuid AND status = 'running'
ORDER BY id
FOR UPDATE;

-- name: request_workflow_cancel
-- Operator: mark a running workflow cancelled (it ends so once its running steps stop); returns it.
UPDATE leasequeue_workflow SET cancel_requested = true
WHERE id = %(id)s::uuid AND status = 'running'
RETURNING id;

-- name: cancel_workflow_steps
-- Operator: a workflow's steps not started cancelled, its running ones asked to stop; returns what changed.
WITH cancelled AS (
    UPDATE leasequeue_job SET status = 'cancelled', finished_at = now(), lease_expires_at = NULL
    WHERE workflow_id = %(id)s::uuid AND status IN ('waiting', 'queued', 'retrying')
    RETURNING id, status
), asked AS (
    UPDATE leasequeue_job SET cancel_requested = true
    WHERE workflow_id = %(id)s::uuid AND status = 'running' AND NOT cancel_requested
    RETURNING id, status
)
SELECT id, status FROM cancelled UNION ALL SELECT id, status FROM asked;

-- name: workflow_state
-- A workflow's counters and its running steps' progress in one snapshot (a live bar never counts a step twice or not at all).
SELECT workflow.id, workflow.status, workflow.steps_total, workflow.steps_unfinished,
       workflow.steps_failed,
       coalesce((SELECT json_agg(job.progress) FROM leasequeue_job AS job
                 WHERE job.workflow_id = workflow.id AND job.status = 'running'), '[]')::text
           AS running
FROM leasequeue_workflow AS workflow
WHERE workflow.id = %(id)s::uuid;
