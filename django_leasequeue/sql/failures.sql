-- The admin's failures page (admin/failures_page.py): a window's failed jobs grouped by task and
-- the exception class of their last error, and the jobs of one group for its retry or delete.
-- Both read the leasequeue_job_failures index (failed jobs by finished_at, with task_path,
-- last_error_class and id), never the errors column but for one sample per group.

-- name: failure_groups
-- Failed jobs of the last %(window_seconds)s seconds grouped by task and exception class, most jobs first, with the window's bounds and the newest job's message; at most %(limit)s groups, each row telling how many there are in all.
WITH groups AS (
    SELECT task_path, last_error_class AS exception, count(*) AS count,
           min(finished_at) AS first_seen, max(finished_at) AS last_seen,
           count(*) OVER () AS groups_total
    FROM leasequeue_job
    WHERE status = 'failed'
      AND finished_at >= now() - make_interval(secs => %(window_seconds)s::float8)
      AND finished_at <= now()
    GROUP BY task_path, last_error_class
    ORDER BY count DESC, last_seen DESC, task_path, exception
    LIMIT %(limit)s::integer
)
SELECT groups.task_path, groups.exception, groups.count, groups.first_seen, groups.last_seen,
       groups.groups_total, sample.message,
       now() - make_interval(secs => %(window_seconds)s::float8) AS since, now() AS until
FROM groups
LEFT JOIN LATERAL (
    -- The group's newest job: one probe of the index at its finished_at.
    SELECT job.errors -> -1 ->> 'message' AS message FROM leasequeue_job AS job
    WHERE job.status = 'failed' AND job.finished_at = groups.last_seen
      AND job.task_path = groups.task_path
      AND job.last_error_class IS NOT DISTINCT FROM groups.exception
    LIMIT 1
) AS sample ON true
ORDER BY groups.count DESC, groups.last_seen DESC, groups.task_path, groups.exception;

-- name: failure_group_ids
-- The ids of one group's failed jobs, failed between %(since)s and %(until)s, in id order (a group retry or delete takes them all, in batches).
SELECT id FROM leasequeue_job
WHERE status = 'failed'
  AND finished_at >= %(since)s::timestamptz AND finished_at <= %(until)s::timestamptz
  AND task_path = %(task_path)s::text
  AND last_error_class IS NOT DISTINCT FROM %(exception)s::text
ORDER BY id;
