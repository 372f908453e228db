"""A job row's columns, listed once: those a claim returns and those each statement writing new
job rows lists.

The ``.sql`` files name these lists by a token, ``{{list}}``, or ``{{table.list}}`` for
columns qualified by a table name (``RETURNING {{job.claimed_job_columns}}``), which the loader
(``sql/__init__.py``) replaces once, when it reads the files. The Python that reads or writes
the same rows follows the same lists: ``ClaimedJob`` (``records.py``) checks on import that it
takes exactly ``CLAIMED_JOB_COLUMNS``; ``executor.JobCopy`` and ``workflows.enqueue`` write
their COPY rows in the order of ``COPIED_JOB_COLUMNS`` and ``COPIED_STEP_COLUMNS`` (tested).
The claim functions of the migrations return ``CLAIMED_JOB_COLUMNS`` too (tested).
"""

# What every claim returns, in this order: everything ClaimedJob holds, its lease (id,
# lease_version) included.
CLAIMED_JOB_COLUMNS = (
    "id",
    "task_path",
    "queue_name",
    "priority",
    "backend",
    "args",
    "kwargs",
    "attempt",
    "max_attempts",
    "lease_version",
    "timeout_seconds",
    "backoff_seconds",
    "checkpoint",
    "enqueued_at",
    "started_at",
    "last_attempted_at",
    "worker_ids",
    "errors",
    "run_after",
    "workflow_id",
    "upstream",
    "has_dependents",
    "meta",
)

# The parts of a new job row that the statements writing one share.
_NEW_JOB = ("id", "task_path", "queue_name", "priority", "backend", "args", "kwargs")
_RUN_OPTIONS = ("max_attempts", "timeout_seconds", "backoff_seconds")
_LIMITS = ("limits", "flow_key", "concurrency_key", "pending_key")

# The columns each statement writing new job rows lists (the others take their defaults).
# enqueue and enqueue_one: any job.
INSERTED_JOB_COLUMNS = (
    *_NEW_JOB,
    "run_after",
    *_RUN_OPTIONS,
    "unique_key",
    *_LIMITS,
    "expires_at",
    "unique_until",
    "meta",
)
# enqueue_plain: a job without a unique key or limits.
PLAIN_JOB_COLUMNS = (*_NEW_JOB, "run_after", *_RUN_OPTIONS, "expires_at", "meta")
# copy_jobs: jobs without unique keys or limits, in the order executor.JobCopy writes them.
COPIED_JOB_COLUMNS = (*_NEW_JOB, "run_after", "enqueued_at", *_RUN_OPTIONS, "expires_at", "meta")
# copy_steps: a workflow's steps, in the order workflows.enqueue writes them.
COPIED_STEP_COLUMNS = (
    *_NEW_JOB,
    "run_after",
    "enqueued_at",
    *_RUN_OPTIONS,
    *_LIMITS,
    "status",
    "workflow_id",
    "step_name",
    "run_if",
    "upstream",
    "has_dependents",
    "meta",
    "expires_at",
)
# fire_schedule: a schedule's tick.
SCHEDULED_JOB_COLUMNS = (*_NEW_JOB, *_RUN_OPTIONS, "unique_key", *_LIMITS, "expires_at", "meta")

# The lists the .sql files may name, by the name they use.
COLUMN_LISTS: dict[str, tuple[str, ...]] = {
    "claimed_job_columns": CLAIMED_JOB_COLUMNS,
    "inserted_job_columns": INSERTED_JOB_COLUMNS,
    "plain_job_columns": PLAIN_JOB_COLUMNS,
    "copied_job_columns": COPIED_JOB_COLUMNS,
    "copied_step_columns": COPIED_STEP_COLUMNS,
    "scheduled_job_columns": SCHEDULED_JOB_COLUMNS,
}
