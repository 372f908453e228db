"""Periodic jobs (``schedules.sql``): sync the declared schedules, find the due ones, fire a tick
(its job inserted in the statement that advances the schedule)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from django_leasequeue.sql.records import NO_LIMITS, LimitColumns
from django_leasequeue.sql.statement import Row, Statement, statement


class DeclaredSchedule(Protocol):
    """What the statements read of a declared schedule (``schedules.declaration.Declaration``),
    its timing as the schedule row stores it."""

    @property
    def task_path(self) -> str: ...

    @property
    def cron(self) -> str | None: ...

    @property
    def cron_timezone(self) -> str | None: ...

    @property
    def every(self) -> timedelta | None: ...

    @property
    def overlap(self) -> str: ...

    @property
    def catch_up(self) -> int: ...

    @property
    def takes_scheduled_at(self) -> bool: ...

    @property
    def unique_key(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class DueSchedule:
    task_path: str
    version: int
    covered_until: datetime


@dataclass(frozen=True, slots=True)
class DueCheck:
    """The answer of one check: the due schedules, the next due time of the others (None when
    there is none), and the database's clock."""

    due: list[DueSchedule]
    next_due_at: datetime | None
    now: datetime


@dataclass(frozen=True, slots=True)
class Fired:
    """A fire that won its compare-and-swap: the schedule's new version and the job it inserted
    (None when the overlap policy, or the task's unique key, skipped the tick)."""

    version: int
    job_id: UUID | None


@dataclass(frozen=True, slots=True)
class JobFields:
    """What a schedule's job stores besides its arguments (the backend's defaults filled in)."""

    queue_name: str
    priority: int
    backend: str
    max_attempts: int
    timeout_seconds: float | None
    backoff_seconds: float
    # The flow-control columns of the task's and its queue's limits (a scheduled job is held to
    # them too; ``flow.limits.limit_columns``), None without limits.
    limits: LimitColumns | None = None
    # Seconds after its tick's enqueue by which the job must start (the task's expires_after).
    expires_after: float | None = None


def _synced(rows: list[Row]) -> list[str]:
    """The task paths this sync retired."""
    return list(rows[0]["retired"])


def sync_schedules(
    backend: str,
    declarations: Sequence[DeclaredSchedule],
    next_run_ats: Sequence[datetime],
    now: Any,
) -> Statement[list[str]]:
    return statement(
        "sync_schedules",
        _synced,
        backend=backend,
        now=now,
        task_paths=[d.task_path for d in declarations],
        crons=[d.cron for d in declarations],
        cron_timezones=[d.cron_timezone for d in declarations],
        everys=[d.every for d in declarations],
        overlaps=[d.overlap for d in declarations],
        catch_ups=[d.catch_up for d in declarations],
        next_run_ats=list(next_run_ats),
    )


def _due_check(rows: list[Row]) -> DueCheck:
    due = [
        DueSchedule(row["task_path"], row["version"], row["covered_until"])
        for row in rows
        if row["task_path"] is not None
    ]
    later = [row["next_run_at"] for row in rows if row["task_path"] is None]
    return DueCheck(due, later[0] if later else None, rows[0]["now"])


def due_schedules(task_paths: Sequence[str]) -> Statement[DueCheck]:
    return statement("due_schedules", _due_check, task_paths=list(task_paths))


def _fired(rows: list[Row]) -> Fired | None:
    return Fired(rows[0]["version"], rows[0]["job_id"]) if rows else None


def fire_schedule(
    declaration: DeclaredSchedule,
    job: JobFields,
    *,
    job_id: str,
    version: int,
    tick: datetime | None,
    enqueue: bool = True,
    covered_until: datetime | None = None,
    next_run_at: datetime | None = None,
    missed: int = 0,
    meta: str = "{}",
) -> Statement[Fired | None]:
    """Insert the job of ``tick`` (None: now, a "run now" that does not advance the schedule)
    unless the overlap policy skips it, and advance the schedule; None when another process
    changed the schedule since ``version`` was read (it fired, paused or retired it)."""
    limits = job.limits or NO_LIMITS
    return statement(
        "fire_schedule",
        _fired,
        task_path=declaration.task_path,
        version=version,
        tick=tick,
        enqueue=enqueue,
        covered_until=covered_until,
        next_run_at=next_run_at,
        missed=missed,
        job_id=job_id,
        queue_name=job.queue_name,
        priority=job.priority,
        backend=job.backend,
        takes_scheduled_at=declaration.takes_scheduled_at,
        max_attempts=job.max_attempts,
        timeout=job.timeout_seconds,
        backoff=job.backoff_seconds,
        unique_key=declaration.unique_key,
        expires_after=job.expires_after,
        meta=meta,
        limits=limits.limits,
        flow_key=limits.flow_key,
        concurrency_key=limits.concurrency_key,
        pending_key=limits.pending_key,
    )
