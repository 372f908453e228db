"""A scheduled task, validated: its timing, overlap policy, catch-up and how it is called."""

import inspect
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from django_leasequeue.exceptions import InvalidSchedule, InvalidScheduledCall
from django_leasequeue.schedules.timing import CronTiming, Timing, timing_of
from django_leasequeue.task import LeaseTask

OVERLAP_POLICIES = ("skip", "allow")
# What a schedule does when the task does not say (``LeaseTask`` holds None then).
DEFAULT_OVERLAP = "skip"
DEFAULT_CATCH_UP = 1
# The one parameter a scheduled task may take: the tick's time.
SCHEDULED_AT = "scheduled_at"


@dataclass(frozen=True, slots=True)
class Declaration:
    task: LeaseTask
    timing: Timing
    takes_scheduled_at: bool

    @property
    def task_path(self) -> str:
        return self.task.module_path

    @property
    def overlap(self) -> str:
        return self.task.overlap or DEFAULT_OVERLAP

    @property
    def catch_up(self) -> int:
        return DEFAULT_CATCH_UP if self.task.catch_up is None else self.task.catch_up

    @property
    def unique_key(self) -> str | None:
        """A string unique key is stored on every job of the schedule (a callable is refused)."""
        return self.task.unique_key if isinstance(self.task.unique_key, str) else None

    # The timing as the schedule's row stores it: a cron expression and its time zone, or an
    # interval (``sync_schedules``).

    @property
    def cron(self) -> str | None:
        timing = self.timing
        return timing.expression if isinstance(timing, CronTiming) else None

    @property
    def cron_timezone(self) -> str | None:
        timing = self.timing
        return timing.timezone.key if isinstance(timing, CronTiming) else None

    @property
    def every(self) -> timedelta | None:
        return self.task.every if self.cron is None else None


def declaration_of(task: LeaseTask) -> Declaration:
    """Validate a scheduled task; raises InvalidSchedule (or InvalidScheduledCall) saying why."""
    if not task.is_scheduled and task.schedule_options:
        given = ", ".join(f"{name}={getattr(task, name)!r}" for name in task.schedule_options)
        raise InvalidSchedule(
            f"{given} without cron or every: the task is not a schedule, so it has no effect. "
            "Give cron or every, or remove it."
        )
    timing = timing_of(task.cron, task.cron_timezone, task.every, settings.TIME_ZONE)
    if task.overlap is not None and task.overlap not in OVERLAP_POLICIES:
        raise InvalidSchedule(f"overlap must be 'skip' or 'allow', not {task.overlap!r}.")
    catch_up = task.catch_up
    if catch_up is not None and (
        not isinstance(catch_up, int) or isinstance(catch_up, bool) or catch_up < 0
    ):
        raise InvalidSchedule(f"catch_up must be a whole number ≥ 0, not {catch_up!r}.")
    if callable(task.unique_key):
        raise InvalidSchedule(
            "a scheduled task's unique_key must be a string: a tick has no arguments to call "
            "it with."
        )
    return Declaration(task, timing, _takes_scheduled_at(task))


def _takes_scheduled_at(task: LeaseTask) -> bool:
    """Whether the function asks for ``scheduled_at``; refuses one needing anything else."""
    parameters = list(inspect.signature(task.func).parameters.values())
    if task.takes_context:
        parameters = parameters[1:]
    takes = [p for p in parameters if p.name == SCHEDULED_AT and p.kind is not p.POSITIONAL_ONLY]
    needed = [
        p.name
        for p in parameters
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p not in takes
    ]
    if needed:
        raise InvalidScheduledCall(
            f"a scheduled task takes no arguments, or only {SCHEDULED_AT!r}; "
            f"{task.name}() needs {', '.join(needed)}."
        )
    return bool(takes)
