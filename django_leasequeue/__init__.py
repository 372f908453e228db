"""django-leasequeue: a django.tasks backend whose jobs live in PostgreSQL under leases.

Everything a project's code needs is importable from here; the backend itself is named in
settings (``TASKS[...]["BACKEND"] = "django_leasequeue.backend.LeaseQueueBackend"``).
"""

from django_leasequeue.exceptions import (
    InvalidTaskArguments,
    JobExpired,
    JobTimeout,
    LeaseExpired,
    LeaseLost,
    QueueFull,
    Snooze,
    TooManySnoozes,
    UndecodableJob,
    UnknownTask,
    UnstorableValue,
)
from django_leasequeue.fencing import fenced_atomic
from django_leasequeue.runtime.context import JobContext
from django_leasequeue.status import CancelOutcome, JobStatus
from django_leasequeue.task import LeaseTask, task

__all__ = [
    "CancelOutcome",
    "InvalidTaskArguments",
    "JobContext",
    "JobExpired",
    "JobStatus",
    "JobTimeout",
    "LeaseExpired",
    "LeaseLost",
    "LeaseTask",
    "QueueFull",
    "Snooze",
    "TooManySnoozes",
    "UndecodableJob",
    "UnknownTask",
    "UnstorableValue",
    "fenced_atomic",
    "task",
]
