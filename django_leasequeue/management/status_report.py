"""What ``manage.py leasequeue status`` shows: queues, live workers, and whether all is well.

``build`` reads it from the job database (the admin's queue summary, the paused queues and the
worker registry); ``render_text`` lays it out on one screen, ``as_json`` for machines. A report
is unhealthy when no worker is alive, or when a queue's oldest due job has waited longer than
``max_age`` (a paused queue's jobs wait by design: they never count): the command then exits 1,
so it can serve as a container health check.
"""

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from django_leasequeue import protocol
from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.control import statements
from django_leasequeue.flow import usage as flow_usage
from django_leasequeue.management.durations import duration

_COUNTS = ("queued", "running", "retrying", "failed")


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
    # Whether the queue is paused (no worker claims its jobs), and the reason given.
    paused: bool = False
    pause_reason: str = ""


@dataclass(frozen=True, slots=True)
class WorkerLine:
    id: str
    host: str
    pid: int
    queues: list[str] | None  # None: every queue
    concurrency: int
    jobs_running: int
    jobs_done: int
    heartbeat_age_seconds: float


@dataclass(frozen=True, slots=True)
class StatusReport:
    backend: str
    taken_at: datetime
    queues: list[QueueLine]
    workers: list[WorkerLine]  # the live ones
    max_age_seconds: float | None
    # The flow-control limits in use: each queue's queue_limits, then the busiest limited tasks
    # and keys; each entry a dict naming its scope, its limits and what they use now.
    limits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """Why the report is unhealthy (empty when healthy)."""
        problems = []
        if not self.workers:
            problems.append("no worker is alive")
        if self.max_age_seconds is not None:
            for queue in self.queues:
                age = queue.oldest_due_seconds
                if age is not None and age > self.max_age_seconds and not queue.paused:
                    problems.append(
                        f"queue {queue.name!r}: the oldest due job has waited {age:.0f} s "
                        f"(more than --max-age {self.max_age_seconds:g} s)"
                    )
        return problems


def build(backend: LeaseQueueBackend, *, max_age_seconds: float | None = None) -> StatusReport:
    """Read the report now; the backend's declared queues are listed even when empty."""
    database = backend.config.database
    rows = {row["queue_name"]: row for row in protocol.execute(protocol.queue_summary(), database)}
    paused = protocol.execute(statements.paused_queues(), database)
    queues = [
        _queue_line(name, rows.get(name), paused.get(name))
        for name in sorted(set(rows) | backend.queues | set(paused))
    ]
    workers = [
        WorkerLine(
            id=row["id"],
            host=row["host"],
            pid=row["pid"],
            queues=_decoded(row["queues"]),
            concurrency=row["concurrency"],
            jobs_running=row["jobs_running"],
            jobs_done=row["jobs_done"],
            heartbeat_age_seconds=max(0.0, row["heartbeat_age"].total_seconds()),
        )
        for row in protocol.execute(protocol.workers(), database)
        if row["alive"]
    ]
    return StatusReport(
        backend=backend.alias,
        taken_at=timezone.now(),
        queues=queues,
        workers=workers,
        max_age_seconds=max_age_seconds,
        limits=_limits_in_use(backend),
    )


def _limits_in_use(backend: LeaseQueueBackend) -> list[dict[str, Any]]:
    database, queue_limits = backend.config.database, backend.config.queue_limits
    limits: list[dict[str, Any]] = []
    for row in flow_usage.queue_limit_rows(queue_limits, database):
        line: dict[str, Any] = {"scope": f"queue {row['queue']}"}
        if row["concurrency"]:
            line["running"] = f"{row['running']}/{row['concurrency']}"
        if row["rate_limit"]:
            line["rate_limit"] = str(row["rate_limit"])
        if row["max_pending"]:
            line["unfinished"] = f"{row['pending']}/{row['max_pending']}"
        limits.append(line)
    for partition in flow_usage.overview(database, queue_limits):
        running = (
            partition.running if partition.cap is None else f"{partition.running}/{partition.cap}"
        )
        limits.append(
            {
                "scope": partition.key,
                "limits": partition.limits,
                "running": running,
                "waiting": partition.waiting,
                **({"now": partition.state} if partition.state else {}),
            }
        )
    return limits


def _decoded(value: Any) -> Any:
    """A jsonb column, which Django's cursor hands over as text."""
    return json.loads(value) if isinstance(value, str) else value


def _queue_line(name: str, row: dict[str, Any] | None, pause: dict[str, Any] | None) -> QueueLine:
    paused, reason = pause is not None, pause["reason"] if pause else ""
    if row is None:
        return QueueLine(name, 0, 0, 0, 0, [], None, 0, paused=paused, pause_reason=reason)
    age = row["oldest_due_age"]
    queued, running, retrying, failed = (int(row[count]) for count in _COUNTS)
    return QueueLine(
        name=name,
        queued=queued,
        running=running,
        retrying=retrying,
        failed=failed,
        estimated=list(row["estimated"]),
        oldest_due_seconds=None if age is None else max(0.0, age.total_seconds()),
        finished_last_minute=int(row["finished_last_minute"]),
        paused=paused,
        pause_reason=reason,
    )


def as_json(report: StatusReport) -> dict[str, Any]:
    """The report as JSON-ready data, with ``healthy`` and ``problems``."""
    data = asdict(report)
    data["taken_at"] = report.taken_at.isoformat()
    data["problems"] = report.problems
    data["healthy"] = not data["problems"]
    return data


def _seconds(value: float | None) -> str:
    return "—" if value is None else duration(value)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), *(line(row) for row in rows)]


def render_text(report: StatusReport) -> str:
    """One screen: the queues, the live workers, the limits in use, and the verdict."""
    when = timezone.localtime(report.taken_at).strftime("%Y-%m-%d %H:%M:%S %Z")
    lines = [f"leasequeue status (backend {report.backend!r}) at {when}", ""]
    queue_rows = [
        [
            queue.name + (" (paused)" if queue.paused else ""),
            *(
                ("~" if count in queue.estimated else "") + f"{getattr(queue, count):,}"
                for count in _COUNTS
            ),
            _seconds(queue.oldest_due_seconds),
            f"{queue.finished_last_minute:,}/min",
        ]
        for queue in report.queues
    ]
    lines += _table(
        ["QUEUE", "QUEUED", "RUNNING", "RETRYING", "FAILED", "OLDEST DUE", "FINISHED"],
        queue_rows,
        right={1, 2, 3, 4, 6},
    )
    if any(queue.estimated for queue in report.queues):
        lines.append("(~ estimated from a sample of the table: too many to count quickly)")
    lines += [
        f"PAUSED: {queue.name}"
        + (f" ({queue.pause_reason})" if queue.pause_reason else "")
        + ": no worker claims its jobs"
        for queue in report.queues
        if queue.paused
    ]
    lines += ["", f"WORKERS: {len(report.workers)} alive"]
    if report.workers:
        lines += _table(
            ["ID", "HOST", "PID", "QUEUES", "RUNNING", "DONE", "HEARTBEAT"],
            [
                [
                    worker.id,
                    worker.host,
                    str(worker.pid),
                    ",".join(worker.queues) if worker.queues is not None else "*",
                    f"{worker.jobs_running}/{worker.concurrency}",
                    f"{worker.jobs_done:,}",
                    f"{_seconds(worker.heartbeat_age_seconds)} ago",
                ]
                for worker in report.workers
            ],
            right={2, 4, 5},
        )
    if report.limits:
        lines += ["", "LIMITS IN USE"]
        lines += [
            ", ".join(f"{key}={value}" for key, value in limit.items()) for limit in report.limits
        ]
    problems = report.problems
    lines += ["", "UNHEALTHY: " + "; ".join(problems) if problems else "OK"]
    return "\n".join(lines)
