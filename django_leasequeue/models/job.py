"""The job table: the single source of truth for every job's state."""

from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Value
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

from django_leasequeue.choices import JobStatus, RunIf, Upstream
from django_leasequeue.ids import uuid7
from django_leasequeue.models.workflow import WorkflowRun


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A stored JSON value that cannot be decoded (nested too deeply for the decoder): its size
    stands in for it, so that the job can still be listed and shown."""

    size: int

    def __str__(self) -> str:
        return f"undecodable ({self.size:,} bytes)"


class TolerantJSONField(models.JSONField):
    """A JSONField whose undecodable values read as ``Undecodable`` instead of raising."""

    def deconstruct(self) -> Any:
        """Under the path migrations know it by (``django_leasequeue.models``)."""
        name, _path, args, kwargs = super().deconstruct()
        return name, "django_leasequeue.models.TolerantJSONField", args, kwargs

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
    # The exception class path of the last attempt's error, written beside it by every
    # statement that records one (fail, the recover sweep, expiry, too many snoozes): the
    # failures page groups a window's failed jobs by it from an index alone, never reading
    # ``errors``.
    last_error_class = models.TextField(null=True, blank=True)  # noqa: DJ001 (no error yet)
    progress = models.JSONField(null=True, blank=True)
    checkpoint = TolerantJSONField(null=True, blank=True)

    # Flow control (NULL: no limit). ``limits`` lists every limit the job is held to, each with
    # its key; ``flow_key`` is the claim partition the flow claim goes round-robin over;
    # ``concurrency_key`` is counted over running jobs, ``pending_key`` over unfinished ones.
    limits = models.JSONField(null=True, blank=True)
    flow_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    concurrency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    pending_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001

    # Workflow steps only (NULL elsewhere): the workflow, the step's name in it, when it runs
    # once its upstream steps have finished, what it receives of their results, and whether any
    # step waits for it (only then does its end settle dependency rows).
    workflow = models.ForeignKey(
        WorkflowRun,
        models.CASCADE,
        null=True,
        blank=True,
        related_name="steps",
        db_constraint=False,  # the real constraint cascades in the database (migrations/sql)
        db_index=False,  # partial, below: plain jobs write no entry
    )
    step_name = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    run_if = models.CharField(max_length=16, choices=RunIf, null=True, blank=True)  # noqa: DJ001
    upstream = models.CharField(max_length=8, choices=Upstream, null=True, blank=True)  # noqa: DJ001
    has_dependents = models.BooleanField(db_default=False)

    # Queue control: a job not started by ``expires_at`` (its first run_after plus the task's
    # expires_after) never runs; ``snoozes`` counts the attempts that ended in a snooze; a job
    # enqueued with ``unique_for`` holds its unique key until ``unique_until``, whatever its
    # status (its enqueue time plus unique_for).
    expires_at = models.DateTimeField(null=True, blank=True)
    snoozes = models.PositiveIntegerField(db_default=0)
    unique_until = models.DateTimeField(null=True, blank=True)

    # Metadata carried from the enqueue to every attempt (``.using(meta=...)``, hooks'
    # ``before_enqueue``; the OpenTelemetry trace context): a JSON object, read as context.meta.
    meta = models.JSONField(db_default=Value({}, models.JSONField()), blank=True)

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        indexes = [
            # In claim order, so a claim reads the first rows instead of sorting the backlog;
            # queue names are filtered during the walk (one index serves any set of queues).
            # Jobs held to limits are left out: the flow claim walks them by partition. Jobs
            # with an expiry are left out too: claims reach them through the next index.
            models.Index(
                models.F("priority").desc(),
                "run_after",
                "id",
                name="leasequeue_job_claim_plain",
                condition=models.Q(
                    status__in=JobStatus.claimable(),
                    flow_key__isnull=True,
                    expires_at__isnull=True,
                ),
            ),
            # Jobs with an expiry, from each priority's first unexpired one (a range scan from
            # now()): a backlog of expired jobs is never read by a claim.
            models.Index(
                models.F("priority").desc(),
                "expires_at",
                name="leasequeue_job_claim_expiring",
                condition=models.Q(
                    status__in=JobStatus.claimable(),
                    flow_key__isnull=True,
                    expires_at__isnull=False,
                ),
            ),
            # The flow claim: partitions by a loose index scan, then each one's head in
            # claim order.
            models.Index(
                "flow_key",
                models.F("priority").desc(),
                "run_after",
                "id",
                name="leasequeue_job_flow_order",
                condition=models.Q(status__in=JobStatus.claimable(), flow_key__isnull=False),
            ),
            # Running jobs per concurrency key: a cap is checked by counting at most cap rows.
            models.Index(
                fields=["concurrency_key"],
                name="leasequeue_job_concurrency",
                condition=models.Q(status=JobStatus.RUNNING, concurrency_key__isnull=False),
            ),
            # Unfinished jobs per max_pending key, counted at enqueue.
            models.Index(
                fields=["pending_key"],
                name="leasequeue_job_pending",
                condition=models.Q(status__in=JobStatus.unfinished(), pending_key__isnull=False),
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
            # Admin: the failures page groups a window's failed jobs by task and exception class
            # from this index alone. Failed jobs only: enqueues, claims and heartbeats skip it.
            models.Index(
                fields=["finished_at"],
                include=["task_path", "last_error_class", "id"],
                name="leasequeue_job_failures",
                condition=models.Q(status=JobStatus.FAILED),
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
            # A workflow's steps; plain jobs (NULL) are left out.
            models.Index(
                fields=["workflow", "id"],
                name="leasequeue_job_workflow",
                condition=models.Q(workflow__isnull=False),
            ),
            # The summary's oldest due job per queue: one probe per queue, whatever the backlog.
            models.Index(
                fields=["queue_name", "run_after"],
                name="leasequeue_job_queue_due",
                condition=models.Q(status__in=JobStatus.claimable()),
            ),
            # While a queue is paused, claims take each open queue's head in claim order here
            # instead of walking the paused queue's backlog in leasequeue_job_claim_plain.
            models.Index(
                "queue_name",
                models.F("priority").desc(),
                "run_after",
                "id",
                name="leasequeue_job_queue_claim",
                condition=models.Q(status__in=JobStatus.claimable(), flow_key__isnull=True),
            ),
            # The expiry sweep: waiting jobs with an expiry, soonest first.
            models.Index(
                fields=["expires_at"],
                name="leasequeue_job_expiry",
                condition=models.Q(status__in=JobStatus.claimable(), expires_at__isnull=False),
            ),
            # Keys held over a period (unique_for), looked up at enqueue whatever the status.
            models.Index(
                fields=["task_path", "unique_key", "unique_until"],
                name="leasequeue_job_unique_period",
                condition=models.Q(unique_until__isnull=False),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["task_path", "unique_key"],
                name="leasequeue_job_unique_key",
                condition=models.Q(status__in=JobStatus.unfinished(), unique_key__isnull=False),
                violation_error_message=_(
                    "An unfinished job of this task already holds this unique key."
                ),
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
