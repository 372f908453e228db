"""A task's queue-control options (``expires_after``, ``unique_for``, ``max_snoozes``), checked
when the task is validated and turned into what a job row stores."""

import math
from datetime import timedelta
from typing import TYPE_CHECKING

from django_leasequeue.tasks_framework import InvalidTask

if TYPE_CHECKING:
    from django_leasequeue.task import Duration, LeaseTask


def duration_seconds(value: "Duration", name: str) -> float | None:
    """``value`` (seconds or a timedelta) in seconds; InvalidTask unless it is positive."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InvalidTask(f"{name} must be a number of seconds or a timedelta, not {value!r}.")
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidTask(f"{name} must be a positive duration, not {value!r}.")
    return seconds


def check(task: "LeaseTask") -> None:
    """Raise InvalidTask naming the first queue-control option of ``task`` that cannot work."""
    duration_seconds(task.expires_after, "expires_after")
    if duration_seconds(task.unique_for, "unique_for") is not None and task.unique_key is None:
        raise InvalidTask("unique_for needs a unique_key: the key it holds for the period.")
    snoozes = task.max_snoozes
    if not isinstance(snoozes, int) or isinstance(snoozes, bool) or snoozes < 0:
        raise InvalidTask(f"max_snoozes must be a whole number ≥ 0, not {snoozes!r}.")
