-- The job list's search by argument (admin/argument_search.py): arguments have no index, so a
-- search reads a bounded range of the primary key (ids are time-ordered) and no more.

-- name: nth_newest_id
-- The id of the %(rows)s-th newest job from %(floor)s on, or nothing when fewer jobs are that new: where a search of a busy window stops (an index-only walk of the primary key, at most %(rows)s entries).
SELECT id FROM leasequeue_job
WHERE id >= %(floor)s::uuid
ORDER BY id DESC
OFFSET %(rows)s::integer - 1
LIMIT 1;
