"""The schedule table's statements (sql/schedules.sql), built as ``protocol.Statement``s that
run with ``protocol.execute`` (Django's connection) or ``protocol.aexecute`` (a worker's
connection)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django_leasequeue.flow.limits import JobLimits
from django_leasequeue.protocol import Row, Statement, limit_columns
from django_leasequeue.schedules.declaration import Declaration
from django_leasequeue.schedules.timing import CronTiming
from django_leasequeue.sql import QUERIES


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
    # The task's and its queue's flow-control limits (a scheduled job is held to them too).
    limits: JobLimits | None = None
    # Seconds after its tick's enqueue by which the job must start (the task's expires_after).
    expires_after: float | None = None


def _synced(rows: list[Row]) -> list[str]:
    """The task paths this sync retired."""
    return list(rows[0]["retired"])


def sync_schedules(
    backend: str, declarations: Sequence[Declaration], next_run_ats: Sequence[datetime], now: Any
) -> Statement[list[str]]:
    return Statement(
        QUERIES["sync_schedules"],
        {
            "backend": backend,
            "now": now,
            "task_paths": [d.task_path for d in declarations],
            "crons": [_cron(d) for d in declarations],
            "cron_timezones": [_cron_timezone(d) for d in declarations],
            "everys": [d.task.every if _cron(d) is None else None for d in declarations],
            "overlaps": [d.overlap for d in declarations],
            "catch_ups": [d.catch_up for d in declarations],
            "next_run_ats": list(next_run_ats),
        },
        _synced,
    )


def _cron(declaration: Declaration) -> str | None:
    timing = declaration.timing
    return timing.expression if isinstance(timing, CronTiming) else None


def _cron_timezone(declaration: Declaration) -> str | None:
    timing = declaration.timing
    return timing.timezone.key if isinstance(timing, CronTiming) else None


def _due_check(rows: list[Row]) -> DueCheck:
    due = [
        DueSchedule(row["task_path"], row["version"], row["covered_until"])
        for row in rows
        if row["task_path"] is not None
    ]
    later = [row["next_run_at"] for row in rows if row["task_path"] is None]
    return DueCheck(due, later[0] if later else None, rows[0]["now"])


def due_schedules(task_paths: Sequence[str]) -> Statement[DueCheck]:
    return Statement(QUERIES["due_schedules"], {"task_paths": list(task_paths)}, _due_check)


def _fired(rows: list[Row]) -> Fired | None:
    return Fired(rows[0]["version"], rows[0]["job_id"]) if rows else None


def fire_schedule(
    declaration: Declaration,
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
    return Statement(
        QUERIES["fire_schedule"],
        {
            "task_path": declaration.task_path,
            "version": version,
            "tick": tick,
            "enqueue": enqueue,
            "covered_until": covered_until,
            "next_run_at": next_run_at,
            "missed": missed,
            "job_id": job_id,
            "queue_name": job.queue_name,
            "priority": job.priority,
            "backend": job.backend,
            "takes_scheduled_at": declaration.takes_scheduled_at,
            "max_attempts": job.max_attempts,
            "timeout": job.timeout_seconds,
            "backoff": job.backoff_seconds,
            "unique_key": declaration.unique_key,
            "expires_after": job.expires_after,
            "meta": meta,
            **limit_columns(job.limits),
        },
        _fired,
    )
