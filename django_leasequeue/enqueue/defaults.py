"""What every job of one task stores, its options resolved against the backend's defaults."""

from typing import NamedTuple

from django_leasequeue.flow.limits import TaskLimits


class TaskDefaults(NamedTuple):
    """What every job of one task stores, resolved once per enqueue."""

    task_path: str
    max_attempts: int
    timeout_seconds: float | None
    backoff_seconds: float
    keyed: bool
    # The task's and its queue's flow-control limits; None when neither has any.
    flow: TaskLimits | None
    # Queue control, in seconds (None: never expires / the key is held while unfinished).
    expires_after: float | None = None
    unique_for: float | None = None
