"""The job table: the single source of truth for every job's state."""

from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Value
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from django_leasequeue.ids import uuid7
from django_leasequeue.schedules.model import Schedule
from django_leasequeue.status import JobStatus

__all__ = ["Job", "Schedule", "TolerantJSONField", "Undecodable"]


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A stored JSON value that cannot be decoded (nested too deeply for the decoder): its size
    stands in for it, so that the job can still be listed and shown."""

    size: int

    def __str__(self) -> str:
        return f"undecodable ({self.size:,} bytes)"


class TolerantJSONField(models.JSONField):
    """A JSONField whose undecodable values read as ``Undecodable`` instead of raising."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        try:
            return super().from_db_value(value, expression, connection)
        except RecursionError:
            return Undecodable(len(value.encode()) if isinstance(value, str) else 0)


class Job(models.Model):
    """One enqueued call of a task, with its lease while a worker runs it.

    Columns that heartbeats write (``heartbeat_at``, ``lease_expires_at``, ``progress``) are kept
    out of every index so that a heartbeat is a HOT update.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    task_path = models.CharField(max_length=255)
    queue_name = models.CharField(max_length=100, db_default="default")
    priority = models.SmallIntegerField(db_default=0)
    args = TolerantJSONField(default=list, blank=True)
    kwargs = TolerantJSONField(default=dict, blank=True)
    backend = models.CharField(max_length=100, db_default="default")

    status = models.CharField(max_length=16, choices=JobStatus, db_default=JobStatus.QUEUED)
    run_after = models.DateTimeField(db_default=Now())
    enqueued_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    last_attempted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    attempt = models.PositiveIntegerField(db_default=0)
    max_attempts = models.PositiveIntegerField(db_default=3)
    timeout_seconds = models.FloatField(null=True, blank=True)
    backoff_seconds = models.FloatField(db_default=1.0)

    worker_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 (never claimed)
    worker_ids = models.JSONField(db_default=Value([], models.JSONField()), blank=True)
    lease_version = models.PositiveIntegerField(db_default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(db_default=False)

    # NULL, not "", means "no key": the partial unique index ignores NULLs.
    unique_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    result = TolerantJSONField(null=True, blank=True)
    errors = models.JSONField(db_default=Value([], models.JSONField()), blank=True)
    progress = models.JSONField(null=True, blank=True)
    checkpoint = TolerantJSONField(null=True, blank=True)

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        indexes = [
            # In claim order, so a claim reads the first rows instead of sorting the backlog;
            # queue names are filtered during the walk (one index serves any set of queues).
            models.Index(
                models.F("priority").desc(),
                "run_after",
                "id",
                name="leasequeue_job_claim_order",
                condition=models.Q(status__in=JobStatus.claimable()),
            ),
            models.Index(
                fields=["queue_name"],
                name="leasequeue_job_running",
                condition=models.Q(status=JobStatus.RUNNING),
            ),
            # Finished jobs only: enqueues and claims (finished_at NULL) skip this index.
            models.Index(
                fields=["status", "finished_at"],
                name="leasequeue_job_finished",
                condition=models.Q(finished_at__isnull=False),
            ),
            # Admin: per-queue counts of the summary (index-only) and the status/queue filters.
            # Partial: the bulk of the table, succeeded jobs, is listed through the primary key.
            models.Index(
                fields=["status", "queue_name", "id"],
                name="leasequeue_job_status_queue",
                condition=~models.Q(status=JobStatus.SUCCEEDED),
            ),
            # Admin: the task filter, and its list of task paths (a loose index scan).
            models.Index(fields=["task_path", "id"], name="leasequeue_job_task"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["unique_key"],
                name="leasequeue_job_unique_key",
                condition=models.Q(status__in=JobStatus.unfinished(), unique_key__isnull=False),
                violation_error_message=_("An unfinished job already holds this unique key."),
            ),
            models.CheckConstraint(
                condition=models.Q(priority__gte=-100, priority__lte=100),
                name="leasequeue_job_priority_range",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=JobStatus.values),
                name="leasequeue_job_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_path} [{self.status}] {self.id}"
