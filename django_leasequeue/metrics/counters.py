"""The counters and histograms of job life, incremented where it happens.

Enqueue counts in the process that enqueues (on commit); everything else counts in the worker
process that saw it. Labels are the queue and the task path, never a job id (one series per
job would swamp Prometheus). Without prometheus-client every function here does nothing, so
the extra stays optional for workers and web processes alike.

With ``PROMETHEUS_MULTIPROC_DIR`` set, prometheus-client keeps the values in files there, one
set per process, and the metrics view adds them up (docs/operations.md).
"""

import logging
import os
from collections import Counter as Tally
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django_leasequeue.choices import JobStatus
from django_leasequeue.metrics.client import multiprocess, prometheus_client, require

logger = logging.getLogger(__name__)

# prometheus-client's switch to multiprocess mode: where every process writes its values.
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
LABELS = ("queue", "task")
# Jobs last from milliseconds to hours; waits from nothing to a day's backlog.
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
LATENCY_BUCKETS = (*SECONDS_BUCKETS, 4 * 3600, 24 * 3600)

if prometheus_client is not None:
    _Counter, _Histogram = prometheus_client.Counter, prometheus_client.Histogram
    # prometheus-client appends "_total" to counter names.
    ENQUEUED = _Counter("leasequeue_jobs_enqueued", "Jobs enqueued (committed).", LABELS)
    STARTED = _Counter("leasequeue_jobs_started", "Attempts started by a worker.", LABELS)
    SUCCEEDED = _Counter("leasequeue_jobs_succeeded", "Jobs that succeeded.", LABELS)
    FAILED = _Counter("leasequeue_jobs_failed", "Jobs that failed for good (dead letters).", LABELS)
    RETRIED = _Counter(
        "leasequeue_jobs_retried", "Attempts that failed and were scheduled again.", LABELS
    )
    CANCELLED = _Counter("leasequeue_jobs_cancelled", "Running jobs that ended cancelled.", LABELS)
    RECOVERED = _Counter(
        "leasequeue_leases_recovered",
        "Expired leases the recover sweep took back from a vanished worker.",
        LABELS,
    )
    EXPIRED = _Counter(
        "leasequeue_jobs_expired",
        "Jobs that expired before they started (expires_after); also counted as failed.",
        LABELS,
    )
    STALE_WRITES = _Counter(
        "leasequeue_stale_writes_rejected",
        "Writes refused by fencing: the worker had lost the job's lease.",
        LABELS,
    )
    RUN_SECONDS = _Histogram(
        "leasequeue_job_run_seconds",
        "Time from claim to outcome of an attempt.",
        LABELS,
        buckets=SECONDS_BUCKETS,
    )
    QUEUE_LATENCY_SECONDS = _Histogram(
        "leasequeue_job_queue_latency_seconds",
        "Time from when an attempt was due to when a worker claimed it.",
        LABELS,
        buckets=LATENCY_BUCKETS,
    )
    _BY_STATUS: dict[str, prometheus_client.Counter] = {
        JobStatus.SUCCEEDED: SUCCEEDED,
        JobStatus.FAILED: FAILED,
        JobStatus.RETRYING: RETRIED,
        JobStatus.CANCELLED: CANCELLED,
    }


# Each metric's series of one (queue, task): what ``labels()`` returns, kept here because
# every job start and finish counts in four of them, and ``labels()`` (argument checks, a lock)
# costs more than the count itself: 16 µs of worker CPU a job with it, 8 without.
_series: dict[tuple[Any, str, str], Any] = {}


def _labelled(metric: Any, queue: str, task: str) -> Any:
    key = (metric, queue, task)
    series = _series.get(key)
    if series is None:
        series = _series[key] = metric.labels(queue, task)
    return series


def enqueued(jobs: Iterable[tuple[str, str]]) -> None:
    """``(queue, task_path)`` of each job whose enqueue committed."""
    if prometheus_client is None:
        return
    for (queue, task), count in Tally(jobs).items():
        _labelled(ENQUEUED, queue, task).inc(count)


def started(queue: str, task: str, due_at: datetime, claimed_at: datetime) -> None:
    """An attempt started: it was due at ``due_at`` and claimed at ``claimed_at`` (both the
    database's clock)."""
    if prometheus_client is None:
        return
    _labelled(STARTED, queue, task).inc()
    _labelled(QUEUE_LATENCY_SECONDS, queue, task).observe(
        max(0.0, (claimed_at - due_at).total_seconds())
    )


def finished(queue: str, task: str, status: str, run_seconds: float) -> None:
    """An attempt's outcome was written: succeeded, retrying, failed or cancelled."""
    if prometheus_client is None:
        return
    counter = _BY_STATUS.get(status)
    if counter is not None:
        _labelled(counter, queue, task).inc()
    _labelled(RUN_SECONDS, queue, task).observe(run_seconds)


def recovered(queue: str, task: str, status: str) -> None:
    """The sweep took back an expired lease; the job is now ``status`` (retrying, or failed /
    cancelled, which count as such too: a poison pill's last attempt fails the job here)."""
    if prometheus_client is None:
        return
    RECOVERED.labels(queue, task).inc()
    counter = _BY_STATUS.get(status)
    if counter is not None:
        counter.labels(queue, task).inc()


def expired(queue: str, task: str, *, also_failed: bool = True) -> None:
    """A job ended failed with JobExpired (the sweep found it, or its retry or snooze would
    have started after its expiry); ``also_failed=False`` where ``finished`` counts it."""
    if prometheus_client is None:
        return
    EXPIRED.labels(queue, task).inc()
    if also_failed:
        FAILED.labels(queue, task).inc()


def stale_write(queue: str, task: str) -> None:
    if prometheus_client is not None:
        STALE_WRITES.labels(queue, task).inc()


def serve(port: int) -> None:
    """This process's own metrics on ``port`` (``metrics_port`` without multiprocess mode).
    A port that cannot be bound is logged, not fatal: the worker runs jobs without it."""
    try:
        require().start_http_server(port)
    except OSError as exc:
        logger.error("Cannot serve metrics on port %d (%s); running without.", port, exc)
        return
    logger.info("Serving metrics on port %d.", port)


def mark_process_dead(pid: int) -> None:
    """Multiprocess mode: drop a dead process's live-gauge files. Its counter and histogram
    files stay on purpose: they keep adding up, so totals never go backwards."""
    if multiprocess is not None and os.environ.get(MULTIPROC_DIR):
        multiprocess.mark_process_dead(pid)
