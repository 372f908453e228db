"""The app's tables, one module each; Django finds them here, and code imports them from here."""

from django_leasequeue.models.job import Job, TolerantJSONField, Undecodable
from django_leasequeue.models.queue import PausedQueue
from django_leasequeue.models.queue_history import (
    IntegerArrayField,
    QueueHistory,
    QueueHistoryMark,
)
from django_leasequeue.models.rate_bucket import RateBucket
from django_leasequeue.models.schedule import Schedule
from django_leasequeue.models.worker_registry import Worker
from django_leasequeue.models.workflow import StepDependency, WorkflowRun

__all__ = [
    "IntegerArrayField",
    "Job",
    "PausedQueue",
    "QueueHistory",
    "QueueHistoryMark",
    "RateBucket",
    "Schedule",
    "StepDependency",
    "TolerantJSONField",
    "Undecodable",
    "Worker",
    "WorkflowRun",
]
