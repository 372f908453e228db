"""The statements of queue control (sql/queue_control.sql), built as ``protocol.Statement``s that
run with ``protocol.execute`` (Django's connection) or ``protocol.aexecute`` (a worker's)."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django_leasequeue.protocol import FailOutcome, Lease, Row, Statement, TaskKey
from django_leasequeue.sql import QUERIES


@dataclass(frozen=True, slots=True)
class PausedQueues:
    """What ``open_queues`` found: the paused queues, and (while one is) the served queues that
    are not (None while nothing is paused: claim the usual way)."""

    paused: list[str]
    open: list[str] | None


@dataclass(frozen=True, slots=True)
class SnoozeOutcome(FailOutcome):
    """Where a snooze left its job: ``queued`` until ``run_after``, ``failed`` (too many
    snoozes) or ``cancelled`` (a cancel was requested)."""


@dataclass(frozen=True, slots=True)
class ExpiredJob:
    id: UUID
    queue_name: str
    task_path: str


def _statement[T](name: str, read: Any, **params: Any) -> Statement[T]:
    return Statement(QUERIES[name], params, read)


def _rows(rows: list[Row]) -> list[Row]:
    return rows


def _applied(rows: list[Row]) -> bool:
    return bool(rows)


def lock_paused_queues() -> Statement[list[Row]]:
    """Only inside a transaction: waits for the claims in flight, then holds off new ones."""
    return _statement("lock_paused_queues", _rows)


def _newly_paused(rows: list[Row]) -> bool:
    return bool(rows[0]["newly_paused"])


def pause_queue(queue_name: str, reason: str) -> Statement[bool]:
    """True when the queue was not paused before."""
    return _statement("pause_queue", _newly_paused, queue_name=queue_name, reason=reason)


def resume_queue(queue_name: str) -> Statement[bool]:
    """True when the queue was paused."""
    return _statement("resume_queue", _applied, queue_name=queue_name)


def _by_queue(rows: list[Row]) -> dict[str, Row]:
    return {row.pop("queue_name"): row for row in rows}


def paused_queues() -> Statement[dict[str, Row]]:
    """``queue -> {reason, paused_at}`` of every paused queue."""
    return _statement("paused_queues", _by_queue)


def _paused_and_open(rows: list[Row]) -> PausedQueues:
    paused = list(rows[0]["paused"])
    return PausedQueues(paused, list(rows[0]["open"]) if paused else None)


def open_queues(queues: Sequence[str] | None) -> Statement[PausedQueues]:
    """The paused queues, and while there are any, which of ``queues`` (None: every queue with
    waiting jobs) are open."""
    return _statement(
        "open_queues", _paused_and_open, queues=None if queues is None else list(queues)
    )


def _ids(rows: list[Row]) -> list[UUID]:
    return [row["id"] for row in rows]


def due_in_queue(queue_name: str, *, limit: int) -> Statement[list[UUID]]:
    return _statement("due_in_queue", _ids, queue_name=queue_name, limit=limit)


def _expired(rows: list[Row]) -> list[ExpiredJob]:
    return [ExpiredJob(**row) for row in rows]


def expire_jobs(*, limit: int) -> Statement[list[ExpiredJob]]:
    return _statement("expire_jobs", _expired, limit=limit)


def expire_doomed(ids: Iterable[UUID]) -> Statement[list[ExpiredJob]]:
    """Of these jobs, those whose next run was set at or past their expiry end expired."""
    return _statement("expire_doomed", _expired, ids=list(ids))


def _snooze_outcome(rows: list[Row]) -> SnoozeOutcome | None:
    if not rows:
        return None
    row = rows[0]
    return SnoozeOutcome(row["status"], row["run_after"], row["expires_at"])


def snooze(lease: Lease, seconds: float, *, max_snoozes: int) -> Statement[SnoozeOutcome | None]:
    """Fenced; None when the lease was lost (nothing was written)."""
    return _statement(
        "snooze",
        _snooze_outcome,
        id=lease.job_id,
        lease_version=lease.lease_version,
        seconds=seconds,
        max_snoozes=max_snoozes,
    )


def lock_unique_keys(keys: Iterable[TaskKey]) -> Statement[list[Row]]:
    """Only inside a transaction: waits for, then holds until it ends, the enqueue lock of each
    task's key (in order, so that two enqueues of the same keys cannot deadlock)."""
    ordered = sorted(set(keys))
    return _statement(
        "lock_unique_keys",
        _rows,
        task_paths=[task_path for task_path, _ in ordered],
        keys=[key for _, key in ordered],
    )
