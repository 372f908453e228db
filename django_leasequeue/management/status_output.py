"""``leasequeue status`` laid out: ``render_text`` for a person (aligned columns, like ``kubectl
get``), ``as_json`` for a program (one object of the schema in docs/status.schema.json, whose
``schema_version`` changes only when a field changes meaning or goes away)."""

from dataclasses import asdict, fields
from typing import Any

from django.utils import timezone

from django_leasequeue.human_duration import duration
from django_leasequeue.management.status_report import COUNTS, Cap, StatusReport
from django_leasequeue.management.terminal import printable

SCHEMA_VERSION = 1
# The text's label of each of ``Totals``' counts.
TOTAL_LABELS = {"workers_alive": "Workers alive", "workflows_running": "Workflows running"}
_NONE = "—"


def as_json(report: StatusReport) -> dict[str, Any]:
    """The report as JSON-ready data: a number is always a number, a missing value null."""
    data = asdict(report)
    problems = report.problems
    return {
        "schema_version": SCHEMA_VERSION,
        "backend": report.backend,
        "taken_at": report.taken_at.isoformat(),
        "healthy": not problems,
        "problems": problems,
        "max_age_seconds": report.max_age_seconds,
        "totals": data["totals"],
        "queues": data["queues"],
        "limited_tasks": data["limited_tasks"],
        "workers": data["workers"],
    }


def render_text(report: StatusReport) -> str:
    """One screen: the backend and its totals, the queues, the limits in use, the live workers,
    and the verdict. Tables without rows are left out. Every value is ``printable``: a queue
    name or a pause reason holding an escape sequence shows it, it does not run it."""
    when = timezone.localtime(report.taken_at).strftime("%Y-%m-%d %H:%M:%S %Z")
    header = [("Backend", report.backend), ("Taken at", when)]
    header += [
        (TOTAL_LABELS[f.name], f"{getattr(report.totals, f.name):,}") for f in fields(report.totals)
    ]
    width = max(len(label) for label, _ in header) + 1
    lines = [f"{label + ':':<{width}}  {value}" for label, value in header]
    lines += ["", *_queues(report)]
    if any(queue.estimated for queue in report.queues):
        lines.append("(~ estimated from a sample of the table: too many to count quickly)")
    lines += [
        f"PAUSED: {queue.name}"
        + (f" ({queue.pause_reason})" if queue.pause_reason else "")
        + ": no worker claims its jobs"
        for queue in report.queues
        if queue.paused
    ]
    for table in (_queue_limits(report), _limited_tasks(report), _workers(report)):
        if len(table) > 1:  # more than its header
            lines += ["", *table]
    problems = report.problems
    lines += ["", "UNHEALTHY: " + "; ".join(problems) if problems else "OK"]
    return "\n".join(printable(line) for line in lines)


def _queues(report: StatusReport) -> list[str]:
    rows = [
        [
            queue.name + (" (paused)" if queue.paused else ""),
            *(("~" if c in queue.estimated else "") + f"{getattr(queue, c):,}" for c in COUNTS),
            _NONE if queue.oldest_due_seconds is None else duration(queue.oldest_due_seconds),
            f"{queue.finished_last_minute:,}",
        ]
        for queue in report.queues
    ]
    header = ["QUEUE", "QUEUED", "RUNNING", "RETRYING", "FAILED", "OLDEST DUE", "FINISHED/MIN"]
    return _table(header, rows, right={1, 2, 3, 4, 6})


def _queue_limits(report: StatusReport) -> list[str]:
    rows = [
        [
            queue.name,
            _used(queue.limits.concurrency),
            queue.limits.rate_limit or _NONE,
            _used(queue.limits.max_pending),
        ]
        for queue in report.queues
        if queue.limits is not None
    ]
    return _table(["LIMITED QUEUE", "RUNNING", "RATE LIMIT", "UNFINISHED"], rows, right={1, 3})


def _limited_tasks(report: StatusReport) -> list[str]:
    rows = [
        [
            task.task,
            task.key or _NONE,
            f"{task.running:,}"
            if task.concurrency is None
            else f"{task.running}/{task.concurrency}",
            task.rate_limit or _NONE,
            f"{task.waiting:,}",
            task.held or "",
        ]
        for task in report.limited_tasks
    ]
    header = ["LIMITED TASK", "KEY", "RUNNING", "RATE LIMIT", "WAITING", "HELD BACK"]
    return _table(header, rows, right={2, 4})


def _workers(report: StatusReport) -> list[str]:
    rows = [
        [
            worker.id,
            worker.host,
            str(worker.pid),
            ",".join(worker.queues),
            f"{worker.jobs_running}/{worker.concurrency}",
            f"{worker.jobs_done:,}",
            f"{duration(worker.heartbeat_age_seconds)} ago",
        ]
        for worker in report.workers
    ]
    header = ["WORKER", "HOST", "PID", "QUEUES", "RUNNING", "DONE", "HEARTBEAT"]
    return _table(header, rows, right={2, 4, 5})


def _used(limit: Cap | None) -> str:
    return _NONE if limit is None else f"{limit.used}/{limit.cap}"


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    """Columns as wide as their widest cell, two spaces apart; numbers aligned right. Cells
    are escaped first, so that the columns line up as printed."""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), *(line(row) for row in rows)]
