"""Queue control (``queue_control.sql``): pause (under the paused-queue table's lock) and resume,
the open queues, the expiry sweep, a snooze, the locks of unique keys (held over a period, or
looked up)."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from uuid import UUID

from django_leasequeue.sql.readers import applied, id_list, rows
from django_leasequeue.sql.records import Lease, NextRun, TaskKey
from django_leasequeue.sql.statement import Row, Statement, statement


@dataclass(frozen=True, slots=True)
class PausedQueues:
    """What ``open_queues`` found: the paused queues, and (while one is) the served queues that
    are not (None while nothing is paused: claim the usual way)."""

    paused: list[str]
    open: list[str] | None


@dataclass(frozen=True, slots=True)
class ExpiredJob:
    id: UUID
    queue_name: str
    task_path: str


def lock_paused_queues() -> Statement[list[Row]]:
    """Only inside a transaction: waits for the claims in flight, then holds off new ones."""
    return statement("lock_paused_queues", rows)


def _newly_paused(rows: list[Row]) -> bool:
    return bool(rows[0]["newly_paused"])


def pause_queue(queue_name: str, reason: str) -> Statement[bool]:
    """True when the queue was not paused before."""
    return statement("pause_queue", _newly_paused, queue_name=queue_name, reason=reason)


def resume_queue(queue_name: str) -> Statement[bool]:
    """True when the queue was paused."""
    return statement("resume_queue", applied, queue_name=queue_name)


def _by_queue(rows: list[Row]) -> dict[str, Row]:
    return {row.pop("queue_name"): row for row in rows}


def paused_queues() -> Statement[dict[str, Row]]:
    """``queue -> {reason, paused_at}`` of every paused queue."""
    return statement("paused_queues", _by_queue)


def _paused_and_open(rows: list[Row]) -> PausedQueues:
    paused = list(rows[0]["paused"])
    return PausedQueues(paused, list(rows[0]["open"]) if paused else None)


def open_queues(queues: Sequence[str] | None) -> Statement[PausedQueues]:
    """The paused queues, and while there are any, which of ``queues`` (None: every queue with
    waiting jobs) are open."""
    return statement(
        "open_queues", _paused_and_open, queues=None if queues is None else list(queues)
    )


def due_in_queue(queue_name: str, *, limit: int) -> Statement[list[UUID]]:
    return statement("due_in_queue", id_list, queue_name=queue_name, limit=limit)


def _expired(rows: list[Row]) -> list[ExpiredJob]:
    return [ExpiredJob(**row) for row in rows]


def expire_jobs(*, limit: int) -> Statement[list[ExpiredJob]]:
    return statement("expire_jobs", _expired, limit=limit)


def expire_doomed(ids: Iterable[UUID]) -> Statement[list[ExpiredJob]]:
    """Of these jobs, those whose next run was set at or past their expiry end expired."""
    return statement("expire_doomed", _expired, ids=list(ids))


def _next_run(rows: list[Row]) -> NextRun | None:
    if not rows:
        return None
    row = rows[0]
    return NextRun(row["status"], row["run_after"], row["expires_at"])


def snooze(lease: Lease, seconds: float, *, max_snoozes: int) -> Statement[NextRun | None]:
    """Fenced; None when the lease was lost (nothing was written)."""
    return statement(
        "snooze",
        _next_run,
        id=lease.job_id,
        lease_version=lease.lease_version,
        seconds=seconds,
        max_snoozes=max_snoozes,
    )


def lock_unique_keys(keys: Iterable[TaskKey]) -> Statement[list[Row]]:
    """Only inside a transaction: waits for, then holds until it ends, the enqueue lock of each
    task's key (in order, so that two enqueues of the same keys cannot deadlock)."""
    ordered = sorted(set(keys))
    return statement(
        "lock_unique_keys",
        rows,
        task_paths=[task_path for task_path, _ in ordered],
        keys=[key for _, key in ordered],
    )


def unique_key_holders(keys: Sequence[TaskKey]) -> Statement[dict[TaskKey, Row]]:
    """``(task_path, unique_key) -> row`` (as ``job_results``) of the jobs holding these keys:
    unfinished, or within their ``unique_for`` period whatever their status."""
    return statement(
        "unique_key_holders",
        _by_task_key,
        task_paths=[task_path for task_path, _ in keys],
        unique_keys=[key for _, key in keys],
    )


def _by_task_key(rows: list[Row]) -> dict[TaskKey, Row]:
    return {(row["task_path"], row.pop("unique_key")): row for row in rows}
