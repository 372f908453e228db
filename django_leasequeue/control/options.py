"""A task's queue-control options (``expires_after``, ``unique_for``, ``max_snoozes``), checked
when the task is validated and turned into what a job row stores."""

from typing import TYPE_CHECKING

from django_leasequeue.duration_rule import to_seconds
from django_leasequeue.exceptions import InvalidDuration
from django_leasequeue.tasks_framework import InvalidTask

if TYPE_CHECKING:
    from django_leasequeue.task import Duration, LeaseTask


def duration_seconds(value: "Duration", name: str) -> float | None:
    """``value`` (seconds or a timedelta) in seconds, or None when not given; InvalidDuration
    naming the option unless the one rule of ``duration_rule`` holds."""
    if value is None:
        return None
    try:
        return to_seconds(value)
    except ValueError as exc:
        raise InvalidDuration(f"{name} {exc}.") from None


def check(task: "LeaseTask") -> None:
    """Raise InvalidTask naming the first queue-control option of ``task`` that cannot work."""
    duration_seconds(task.expires_after, "expires_after")
    if duration_seconds(task.unique_for, "unique_for") is not None and task.unique_key is None:
        raise InvalidTask("unique_for needs a unique_key: the key it holds for the period.")
    snoozes = task.max_snoozes
    if not isinstance(snoozes, int) or isinstance(snoozes, bool) or snoozes < 0:
        raise InvalidTask(f"max_snoozes must be a whole number ≥ 0, not {snoozes!r}.")
