"""What ``manage.py leasequeue status`` reports: queues, limits in use, live workers, and whether
all is well (``status_output`` lays it out as text or JSON).

``build`` reads it from the job database (the queue summary, the flow-control usage and the
worker registry). A report is unhealthy when no worker is alive, or when a queue's oldest due job
has waited longer than ``max_age``: the command then exits 1, so it can serve as a container
health check.

Each limit appears once: a queue's ``queue_limits`` on its queue, a task's own limits on its
entry under ``limited_tasks`` (a task's entry leaves out the limits of its queue).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.choices import WorkflowStatus
from django_leasequeue.flow import usage as flow_usage
from django_leasequeue.flow.limits import QueueLimit
from django_leasequeue.models import WorkflowRun
from django_leasequeue.queue_summary import queue_summary
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql import workers as workers_sql
from django_leasequeue.sql.executor import execute

COUNTS = ("queued", "running", "retrying", "failed")
# What a worker started with ``--queues '*'`` lists as its queues: the same token.
EVERY_QUEUE = "*"


@dataclass(frozen=True, slots=True)
class Cap:
    """A limit and how much of it is in use now."""

    cap: int
    used: int


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """A queue's ``queue_limits``: running jobs against its concurrency, its rate limit, and its
    unfinished jobs against its max_pending; None where not set."""

    concurrency: Cap | None
    rate_limit: str | None
    max_pending: Cap | None


@dataclass(frozen=True, slots=True)
class QueueLine:
    name: str
    queued: int
    running: int
    retrying: int
    failed: int
    # Which of the four counts are estimates (a huge backlog is sampled, not counted).
    estimated: list[str]
    # How long the oldest due, unclaimed job has waited; None when nothing is due.
    oldest_due_seconds: float | None
    # Jobs that ended (succeeded, failed, cancelled) in the last minute.
    finished_last_minute: int
    limits: QueueLimits | None
    # Whether the queue is paused (no worker claims its jobs), and the reason given.
    paused: bool = False
    pause_reason: str = ""


@dataclass(frozen=True, slots=True)
class LimitedTask:
    """One of the busiest partitions held to a task's own limits: the task, or one key of it."""

    task: str
    key: str | None  # the value of the task's limit key; None for the task as a whole
    concurrency: int | None  # the cap its ``running`` jobs count against
    rate_limit: str | None
    running: int
    waiting: int
    held: str | None  # why its waiting jobs wait now; None when they may start


@dataclass(frozen=True, slots=True)
class WorkerLine:
    id: str
    host: str
    pid: int
    queues: list[str]  # [EVERY_QUEUE] for every queue
    concurrency: int
    jobs_running: int
    jobs_done: int
    heartbeat_age_seconds: float


@dataclass(frozen=True, slots=True)
class Totals:
    """Counts over the whole backend: the lines under the text's title, ``totals`` in JSON.

    A new count is a field here (filled in ``build``), a label in ``status_output.TOTAL_LABELS``
    and a property of ``totals`` in docs/status.schema.json.
    """

    workers_alive: int
    # Workflows with steps not finished yet.
    workflows_running: int


@dataclass(frozen=True, slots=True)
class StatusReport:
    backend: str
    taken_at: datetime
    max_age_seconds: float | None
    totals: Totals
    queues: list[QueueLine]
    limited_tasks: list[LimitedTask]
    workers: list[WorkerLine]  # the live ones

    @property
    def problems(self) -> list[str]:
        """Why the report is unhealthy (empty when healthy)."""
        problems = []
        if not self.workers:
            problems.append("no worker is alive")
        if self.max_age_seconds is not None:
            for queue in self.queues:
                age = queue.oldest_due_seconds
                # A paused queue's jobs wait by design: they are never overdue.
                if age is not None and age > self.max_age_seconds and not queue.paused:
                    problems.append(
                        f"queue {queue.name!r}: the oldest due job has waited {age:.0f} s "
                        f"(more than --max-age {self.max_age_seconds:g} s)"
                    )
        return problems


def build(backend: LeaseQueueBackend, *, max_age_seconds: float | None = None) -> StatusReport:
    """Read the report now; the backend's declared queues are listed even when empty."""
    database, queue_limits = backend.config.database, backend.config.queue_limits
    limits = {
        row["queue"]: _queue_limits(row)
        for row in flow_usage.queue_limit_rows(queue_limits, database)
    }
    paused = execute(queue_control_sql.paused_queues(), database)
    queues = [
        _queue_line(row, limits.get(row["queue_name"]), paused.get(row["queue_name"]))
        for row in queue_summary(database, backend.queues | set(queue_limits) | set(paused))
    ]
    workers = [
        WorkerLine(
            id=row["id"],
            host=row["host"],
            pid=row["pid"],
            queues=_decoded(row["queues"]) or [EVERY_QUEUE],
            concurrency=row["concurrency"],
            jobs_running=row["jobs_running"],
            jobs_done=row["jobs_done"],
            heartbeat_age_seconds=max(0.0, row["heartbeat_age"].total_seconds()),
        )
        for row in execute(workers_sql.workers(), database)
        if row["alive"]
    ]
    return StatusReport(
        backend=backend.alias,
        taken_at=timezone.now(),
        max_age_seconds=max_age_seconds,
        totals=Totals(
            workers_alive=len(workers),
            workflows_running=WorkflowRun.objects.using(database)
            .filter(status=WorkflowStatus.RUNNING)
            .count(),
        ),
        queues=queues,
        limited_tasks=_limited_tasks(database, queue_limits),
        workers=workers,
    )


def _queue_limits(row: dict[str, Any]) -> QueueLimits:
    concurrency, max_pending = row["concurrency"], row["max_pending"]
    return QueueLimits(
        concurrency=None if concurrency is None else Cap(concurrency, row["running"]),
        rate_limit=None if row["rate_limit"] is None else str(row["rate_limit"]),
        max_pending=None if max_pending is None else Cap(max_pending, row["pending"]),
    )


def _limited_tasks(database: str, queue_limits: Mapping[str, QueueLimit]) -> list[LimitedTask]:
    """The busiest partitions of tasks' own limits (those of a queue's limits alone are the
    queue's, reported on its line)."""
    tasks = []
    for partition in flow_usage.overview(database, queue_limits):
        if not partition.key.startswith("task:"):
            continue
        task, _, key = partition.key.removeprefix("task:").partition(":")
        tasks.append(
            LimitedTask(
                task=task,
                key=key or None,
                concurrency=partition.cap,
                rate_limit=partition.rate_limit,
                running=partition.running,
                waiting=partition.waiting,
                held=partition.state or None,
            )
        )
    return tasks


def _decoded(value: Any) -> Any:
    """A jsonb column, which Django's cursor hands over as text."""
    return json.loads(value) if isinstance(value, str) else value


def _queue_line(
    row: dict[str, Any], limits: QueueLimits | None, pause: dict[str, Any] | None
) -> QueueLine:
    age = row["oldest_due_age"]
    return QueueLine(
        name=row["queue_name"],
        **{count: int(row[count]) for count in COUNTS},
        estimated=list(row["estimated"]),
        oldest_due_seconds=None if age is None else max(0.0, age.total_seconds()),
        finished_last_minute=int(row["finished_last_minute"]),
        limits=limits,
        paused=pause is not None,
        pause_reason=pause["reason"] if pause else "",
    )
