"""The worker registry (``workers.sql``; the table ``leasequeue_worker``, runtime/registry.py)."""

import json
from collections.abc import Sequence
from datetime import datetime

from django_leasequeue.sql.readers import applied, applied_ids, first_value, rows
from django_leasequeue.sql.statement import Row, Statement, statement


def worker_beat(
    *,
    worker_id: str,
    host: str,
    pid: int,
    queues: Sequence[str] | None,
    concurrency: int,
    lease_seconds: float,
    started_at: datetime,
    jobs_running: int,
    jobs_done: int,
) -> Statement[list[Row]]:
    return statement(
        "worker_beat",
        rows,
        id=worker_id,
        host=host,
        pid=pid,
        queues=None if queues is None else json.dumps(list(queues)),
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        started_at=started_at,
        jobs_running=jobs_running,
        jobs_done=jobs_done,
    )


def worker_stopped(worker_id: str, *, ending: str) -> Statement[bool]:
    """Mark a worker's row ended; False when it was already (or is not registered)."""
    return statement("worker_stopped", applied, id=worker_id, exit=ending)


def prune_workers(*, retention_seconds: float) -> Statement[set[str]]:
    return statement("prune_workers", applied_ids, retention_seconds=retention_seconds)


def workers() -> Statement[list[Row]]:
    """Every registered worker, alive first, with ``alive`` and ``heartbeat_age``."""
    return statement("workers", rows)


def workers_alive() -> Statement[int]:
    return statement("workers_alive", first_value)
