"""How a worker calls a scheduled task: ``scheduled_at`` is stored as JSON text (ISO 8601) and
given to the function as the aware datetime it stands for."""

from datetime import datetime
from typing import Any

from django_leasequeue.schedules.declaration import SCHEDULED_AT
from django_leasequeue.tasks_framework import Task


def call_kwargs(task: Task, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The job's keyword arguments as the function receives them."""
    value = kwargs.get(SCHEDULED_AT) if kwargs else None
    if not isinstance(value, str) or not getattr(task, "is_scheduled", False):
        return kwargs
    try:
        return {**kwargs, SCHEDULED_AT: datetime.fromisoformat(value)}
    except ValueError:
        return kwargs  # not a tick's time (enqueued by hand): passed on as it is
