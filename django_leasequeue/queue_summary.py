"""The queue summary that the admin, the metrics gauges and ``leasequeue status`` show: the job
table's counts per queue (``reads_sql.queue_summary``), with every declared queue listed, at zero
when it has no jobs. A queue that is only declared still gets its row and its metric series, so
that an alert on ``leasequeue_jobs_queued{queue="emails"}`` has a series to read from the start.
"""

from collections.abc import Iterable

from django_leasequeue.conf import lease_queue_backends
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.statement import Row


def declared_queues() -> set[str]:
    """The ``QUEUES`` of every lease-queue backend (they share one job table)."""
    return {name for backend in lease_queue_backends() for name in backend.queues}


def queue_summary(database: str, declared: Iterable[str]) -> list[Row]:
    """The summary's rows (see ``reads_sql.queue_summary``) by queue name, one for each queue
    with jobs and each declared queue."""
    rows = {row["queue_name"]: row for row in execute(reads_sql.queue_summary(), database)}
    return [rows.get(name) or _empty(name) for name in sorted(set(rows) | set(declared))]


def _empty(name: str) -> Row:
    return {
        "queue_name": name,
        "queued": 0,
        "running": 0,
        "retrying": 0,
        "failed": 0,
        "estimated": [],
        "oldest_due_age": None,
        "finished_last_minute": 0,
    }
