"""What is read back (``reads.sql``): results, statuses and progress; the admin's queue summary
and task list."""

from collections.abc import Sequence
from uuid import UUID

from django_leasequeue.sql.readers import column, first_or_none, rows, rows_by_id
from django_leasequeue.sql.statement import Row, Statement, statement


def job_results(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Rows to build TaskResults from (``results.result_from_row``); jsonb comes back as text."""
    return statement("job_results", rows, ids=list(ids))


def jobs_listed(
    task_path: str | None, queue_name: str | None, statuses: Sequence[str] | None
) -> Statement[list[Row]]:
    """Rows as ``job_results``'s of a task's jobs (None: any) in a queue (None: any) with one
    of these statuses (None: any), oldest first (the testing helpers)."""
    return statement(
        "jobs_listed",
        rows,
        task_path=task_path,
        queue_name=queue_name,
        statuses=None if statuses is None else list(statuses),
    )


def job_statuses(ids: Sequence[UUID]) -> Statement[dict[UUID, Row]]:
    """``id -> {status, key_held}`` of these jobs now; a deleted job is missing."""
    return statement("job_statuses", rows_by_id, ids=list(ids))


def job_progress(job_id: UUID) -> Statement[Row | None]:
    """``{id, status, progress, attempt}`` of one job (progress as JSON text), or None."""
    return statement("job_progress", first_or_none, id=job_id)


def due_by_queue() -> Statement[dict[str, int]]:
    """``queue_name -> number of due, unclaimed jobs``."""
    return statement("due_by_queue", _due_counts)


def _due_counts(rows: list[Row]) -> dict[str, int]:
    return {row["queue_name"]: row["due"] for row in rows}


# Counts up to this are exact (an index-only scan each); a larger one is estimated.
SUMMARY_EXACT_UP_TO = 2000


# The estimate (leasequeue_estimate_entries, sql/functions/): the pair's stretch of the
# status_queue index cut into this many slices of ids, each read by a chain of at most this
# many steps of two probes of this many entries (a step per burst of jobs). At most
# 2 + slices x (chain x 2 x per_probe + 2) index entries per count: 4,130. Shared with the
# backlog estimate of sql/history.py.
ESTIMATE_SLICES = 16


ESTIMATE_PER_PROBE = 32


ESTIMATE_CHAIN = 4


def queue_summary(
    *,
    exact_up_to: int = SUMMARY_EXACT_UP_TO,
    slices: int = ESTIMATE_SLICES,
    per_probe: int = ESTIMATE_PER_PROBE,
    chain: int = ESTIMATE_CHAIN,
) -> Statement[list[Row]]:
    """Per queue: queued, running, retrying, failed, ``estimated`` (which of those four are
    estimates: a list of statuses), oldest_due_age, finished_last_minute. Stays fast on any
    backlog (docs/admin.md): a huge count is estimated, and says so."""
    return statement(
        "queue_summary",
        rows,
        exact_up_to=exact_up_to,
        slices=slices,
        per_probe=per_probe,
        chain=chain,
    )


def task_paths(*, limit: int) -> Statement[list[str]]:
    return statement("task_paths", column, limit=limit)


def limit_statement_time(*, milliseconds: int) -> Statement[list[Row]]:
    """Only inside a transaction: the limit ends with it (``SET LOCAL``)."""
    return statement("limit_statement_time", rows, milliseconds=milliseconds)
