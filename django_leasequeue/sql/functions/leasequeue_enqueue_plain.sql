-- leasequeue_enqueue_plain: the insert of one job without a unique key or limits (what a web
-- view's task.enqueue() sends), for enqueue_plain_cached (sql/jobs.sql). Returns the job's
-- enqueued_at only: the caller made its id.
--
-- A function so that its INSERT is planned once per session rather than at every enqueue: the
-- caller's connection is Django's, which prepares nothing (PgBouncer before 1.21 cannot carry
-- prepared statements), so PostgreSQL parsed and planned the 13-column INSERT, its casts and
-- its RETURNING for every job. Through the function only a one-call SELECT is planned. One
-- enqueue round trip (psycopg, autocommit, the same row, a warm session): 422-464 µs through
-- the INSERT, 392-408 through this function (a set-returning variant, whose rows go through a
-- tuplestore: 421-437). A session's first call costs more (PL/pgSQL loaded, the function
-- compiled: 2.6 ms against the INSERT's 1.6, p50), so the backend uses the function only where
-- Django keeps sessions across requests (backend.sessions_outlive_requests).

CREATE OR REPLACE FUNCTION leasequeue_enqueue_plain(
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
