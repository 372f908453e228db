"""Gauges read from PostgreSQL when Prometheus scrapes: one collector, three statements.

Per queue: jobs queued, running and retrying, the oldest due job's age and whether the queue is
paused; and the number of worker processes alive. The counts are the admin summary's
(``queue_summary``): exact up to a few thousand, estimated from a sample above, so a scrape stays
fast on any backlog. Every declared queue has its series, at zero while it has no jobs.

Workflows: how many run now, and how many ended by status, counted in the workflow table at
scrape time. That count is a counter to Prometheus (``leasequeue_workflows_finished_total``):
no process sees a workflow end (the step trigger ends it, in whichever transaction finishes its
last step), so it is read rather than incremented. Deleting workflow rows makes it go down,
which ``rate()`` reads as a counter reset.
"""

from collections.abc import Collection, Iterator
from typing import Any

from django.db.models import Count

from django_leasequeue.choices import WorkflowStatus
from django_leasequeue.metrics.client import require
from django_leasequeue.models import WorkflowRun
from django_leasequeue.queue_summary import queue_summary
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql import workers as workers_sql
from django_leasequeue.sql.executor import execute

_PER_QUEUE = (
    ("leasequeue_jobs_queued", "Jobs waiting in the queue (due or not).", "queued"),
    ("leasequeue_jobs_running", "Jobs a worker holds under a lease.", "running"),
    ("leasequeue_jobs_retrying", "Jobs waiting for another attempt.", "retrying"),
)


class DatabaseCollector:
    """A prometheus-client collector over the job table of ``database``."""

    def __init__(self, database: str, declared: Collection[str] = ()) -> None:
        self.database = database
        self.declared = declared

    def describe(self) -> list[Any]:
        return []  # not known before a scrape; registering it must not query the database

    def collect(self) -> Iterator[Any]:
        metric_family = require().metrics_core.GaugeMetricFamily
        summary = queue_summary(self.database, self.declared)
        for name, documentation, column in _PER_QUEUE:
            family = metric_family(name, documentation, labels=["queue"])
            for row in summary:
                family.add_metric([row["queue_name"]], row[column])
            yield family
        oldest = metric_family(
            "leasequeue_oldest_due_job_age_seconds",
            "How long the oldest due, unclaimed job of the queue has waited (0 when none).",
            labels=["queue"],
        )
        for row in summary:
            age = row["oldest_due_age"]
            oldest.add_metric([row["queue_name"]], age.total_seconds() if age else 0.0)
        yield oldest
        paused = execute(queue_control_sql.paused_queues(), self.database)
        paused_family = metric_family(
            "leasequeue_queue_paused",
            "1 while the queue is paused (no worker claims its jobs), else 0.",
            labels=["queue"],
        )
        for queue in sorted({row["queue_name"] for row in summary} | set(paused)):
            paused_family.add_metric([queue], 1.0 if queue in paused else 0.0)
        yield paused_family
        yield metric_family(
            "leasequeue_workers_alive",
            "Worker processes alive: not stopped, heartbeat within their lease.",
            value=execute(workers_sql.workers_alive(), self.database),
        )
        yield from self.workflows()

    def workflows(self) -> Iterator[Any]:
        core = require().metrics_core
        rows = (
            WorkflowRun.objects.using(self.database)
            .values("status")
            .annotate(n=Count("id"))
            .order_by()
        )
        counts = {row["status"]: row["n"] for row in rows}
        yield core.GaugeMetricFamily(
            "leasequeue_workflows_running",
            "Workflows with steps not finished yet.",
            value=counts.get(WorkflowStatus.RUNNING, 0),
        )
        finished = core.CounterMetricFamily(
            "leasequeue_workflows_finished",
            "Workflows that ended, by status (counted in the workflow table at scrape time).",
            labels=["status"],
        )
        for status in (WorkflowStatus.SUCCEEDED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED):
            finished.add_metric([status.value], counts.get(status, 0))
        yield finished
