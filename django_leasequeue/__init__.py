"""django-leasequeue: a django.tasks backend whose jobs live in PostgreSQL under leases.

Everything a project's code needs is importable from here; the backend itself is named in
settings (``TASKS[...]["BACKEND"] = "django_leasequeue.backend.LeaseQueueBackend"``).
"""

from django_leasequeue.choices import CancelOutcome, JobStatus, WorkflowStatus
from django_leasequeue.exceptions import (
    InvalidDuration,
    InvalidSchedule,
    InvalidScheduledCall,
    InvalidTaskArguments,
    InvalidWorkflow,
    JobExpired,
    JobTimeout,
    LeaseExpired,
    LeaseLost,
    LeaseQueueError,
    LimitError,
    MetricsUnavailable,
    PauseFailed,
    QueueFull,
    ScheduleChanged,
    Snooze,
    TooManySnoozes,
    UndecodableJob,
    UnknownTask,
    UnstorableValue,
    UpstreamFailed,
)
from django_leasequeue.fencing import fenced_atomic
from django_leasequeue.runtime.context import JobContext
from django_leasequeue.task import LeaseTask, task
from django_leasequeue.workflows.builder import Step, StepSpec, Workflow, chain, chord, group, step
from django_leasequeue.workflows.handle import WorkflowHandle

__all__ = [
    "CancelOutcome",
    "InvalidDuration",
    "InvalidSchedule",
    "InvalidScheduledCall",
    "InvalidTaskArguments",
    "InvalidWorkflow",
    "JobContext",
    "JobExpired",
    "JobStatus",
    "JobTimeout",
    "LeaseExpired",
    "LeaseLost",
    "LeaseQueueError",
    "LeaseTask",
    "LimitError",
    "MetricsUnavailable",
    "PauseFailed",
    "QueueFull",
    "ScheduleChanged",
    "Snooze",
    "Step",
    "StepSpec",
    "TooManySnoozes",
    "UndecodableJob",
    "UnknownTask",
    "UnstorableValue",
    "UpstreamFailed",
    "Workflow",
    "WorkflowHandle",
    "WorkflowStatus",
    "chain",
    "chord",
    "fenced_atomic",
    "group",
    "step",
    "task",
]
