-- FROZEN: the SQL that migrations 0001-0023 ran, as 0001_squashed_0023_unique_keys_per_task
-- runs it on a new database (after creating the models' tables), in their final text. Never
-- edit this file: a later migration that changes a function carries, or reads, a copy of its
-- own. What each function does, and why, is told in its current file,
-- django_leasequeue/sql/functions/<name>.sql.

-- Free space in each page lets heartbeat updates stay on the page (HOT, no index writes).
ALTER TABLE leasequeue_job SET (fillfactor = 80);

-- Foreign keys that cascade in the database: raw deletes (prunejobs, the admin's batched
-- deletes) take a workflow's steps and a step's dependency rows with them.

ALTER TABLE leasequeue_job ADD CONSTRAINT leasequeue_job_workflow_fk
    FOREIGN KEY (workflow_id) REFERENCES leasequeue_workflow (id) ON DELETE CASCADE;
ALTER TABLE leasequeue_dependency ADD CONSTRAINT leasequeue_dependency_parent_fk
    FOREIGN KEY (parent_id) REFERENCES leasequeue_job (id) ON DELETE CASCADE;
ALTER TABLE leasequeue_dependency ADD CONSTRAINT leasequeue_dependency_child_fk
    FOREIGN KEY (child_id) REFERENCES leasequeue_job (id) ON DELETE CASCADE;

-- leasequeue_release_children: see sql/functions/leasequeue_release_children.sql.
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

-- leasequeue_step_status_changed: see sql/functions/leasequeue_step_status_changed.sql.
CREATE FUNCTION leasequeue_step_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- leasequeue_complete_steps: see sql/functions/leasequeue_complete_steps.sql.
CREATE FUNCTION leasequeue_complete_steps(ids uuid[], versions integer[], results jsonb[])
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

-- leasequeue_complete_many: see sql/functions/leasequeue_complete_many.sql.
CREATE FUNCTION leasequeue_complete_many(ids uuid[], versions integer[], results jsonb[])
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

-- leasequeue_claim_by_ids: see sql/functions/leasequeue_claim_by_ids.sql.
CREATE FUNCTION leasequeue_claim_by_ids(ids uuid[], claimer text, lease_seconds float8,
                                        flow_claim boolean)
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
AS $$
#variable_conflict use_column
BEGIN
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
    WHERE job.id = ANY(ids)
      AND job.status || '' IN ('queued', 'retrying')
      AND job.run_after <= now()
      AND (job.flow_key IS NULL OR flow_claim)
      AND (job.expires_at IS NULL OR job.expires_at > now())
      AND job.queue_name || '' <> ALL(ARRAY(SELECT paused.queue_name
                                             FROM leasequeue_paused_queue AS paused))
    RETURNING job.id, job.task_path, job.queue_name, job.priority, job.backend, job.args,
              job.kwargs, job.attempt, job.max_attempts, job.lease_version,
              job.timeout_seconds, job.backoff_seconds, job.checkpoint, job.enqueued_at,
              job.started_at, job.last_attempted_at, job.worker_ids, job.errors, job.run_after,
              job.workflow_id, job.upstream, job.has_dependents, job.meta;
END $$;

-- leasequeue_claim_batch: see sql/functions/leasequeue_claim_batch.sql.
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

-- leasequeue_enqueue_plain: see sql/functions/leasequeue_enqueue_plain.sql.
CREATE FUNCTION leasequeue_enqueue_plain(
    new_id uuid, new_task_path text, new_queue_name text, new_priority smallint,
    new_backend text, new_args jsonb, new_kwargs jsonb, new_run_after timestamptz,
    new_max_attempts integer, new_timeout_seconds float8, new_backoff_seconds float8,
    new_expires_after float8, new_meta jsonb)
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
    inserted_at timestamptz;
BEGIN
    INSERT INTO leasequeue_job (id, task_path, queue_name, priority, backend, args, kwargs,
                                run_after, max_attempts, timeout_seconds, backoff_seconds,
                                expires_at, meta)
    VALUES (new_id, new_task_path, new_queue_name, new_priority, new_backend, new_args,
            new_kwargs, coalesce(new_run_after, now()), new_max_attempts, new_timeout_seconds,
            new_backoff_seconds,
            coalesce(new_run_after, now()) + make_interval(secs => new_expires_after),
            new_meta)
    RETURNING enqueued_at INTO inserted_at;
    RETURN inserted_at;
END $$;

-- The step trigger: see sql/functions/triggers.sql.
CREATE TRIGGER leasequeue_step_status_changed AFTER UPDATE OF status ON leasequeue_job
FOR EACH ROW WHEN (NEW.workflow_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
                   AND (OLD.status IN ('succeeded', 'failed', 'cancelled')
                        OR NEW.status IN ('succeeded', 'failed', 'cancelled'))
                   AND current_setting('leasequeue.completing_steps', true)
                       IS DISTINCT FROM 'on')
EXECUTE FUNCTION leasequeue_step_status_changed();
