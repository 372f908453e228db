"""``LeaseTask``: Django's ``Task`` plus the options Django's ``@task`` lacks."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Literal, overload

from django_leasequeue.tasks_framework import (
    DEFAULT_TASK_BACKEND_ALIAS,
    DEFAULT_TASK_PRIORITY,
    DEFAULT_TASK_QUEUE_NAME,
    Task,
)
from django_leasequeue.tasks_framework import task as django_task

# The scheduled tasks of this process, by path: registered by ``@task(cron=...)`` /
# ``@task(every=...)`` (and by a task giving a schedule's option without either, so that the checks
# can refuse it); ``schedules.discovery`` imports the apps' tasks modules, then reads them here.
_SCHEDULED: dict[str, "LeaseTask"] = {}

UniqueKey = str | Callable[..., str] | None
# A duration: seconds, or a timedelta.
Duration = float | timedelta | None
# Snoozes a job may take before it fails with TooManySnoozes, unless its task says otherwise.
DEFAULT_MAX_SNOOZES = 100
# A flow-control key: a callable given the job's arguments, returning the key's name.
LimitKey = Callable[..., str] | None
Overlap = Literal["skip", "allow"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseTask(Task):
    """A Django Task with retry policy, timeout, unique key, flow-control limits and queue
    control (expiry, snoozes, uniqueness over a period).

    ``None`` means "the backend's default" (``OPTIONS``) for max_attempts and backoff_seconds,
    and "no limit" / "no key" for the rest. ``unique_key`` is a string, or a callable given the
    call's ``*args, **kwargs`` that returns one. The flow-control options (see the "Flow control"
    docs) cap running jobs (``concurrency``), starts per period (``rate_limit``, e.g. "10/s") and
    unfinished jobs (``max_pending``) across every worker; each ``*_key`` callable, given the
    job's arguments, splits its cap per key. ``expires_after`` (seconds or a timedelta, from
    the job's first ``run_after``) is how late a job may start before it expires unrun;
    ``unique_for`` holds the unique key for a period from the first enqueue, whatever the
    job's status; ``max_snoozes`` is how many times a job may ``Snooze`` before it fails.
    Every duration (``timeout``, ``backoff_seconds``, ``expires_after``, ``unique_for``) is
    seconds or a timedelta under one rule (``duration_rule``): finite, above 0, and ending by
    the last day a job row can hold; anything else raises ``InvalidDuration`` naming it.
    """

    max_attempts: int | None = None
    timeout: Duration = None
    backoff_seconds: Duration = None
    unique_key: UniqueKey = None
    concurrency: int | None = None
    concurrency_key: LimitKey = None
    rate_limit: str | None = None
    rate_limit_key: LimitKey = None
    max_pending: int | None = None
    max_pending_key: LimitKey = None
    expires_after: Duration = None
    unique_for: Duration = None
    max_snoozes: int = DEFAULT_MAX_SNOOZES
    # Periodic jobs (docs/periodic-jobs.md): a cron expression or an interval, checked by the
    # system checks (leasequeue.E020-E022), not here, so that a bad one is reported, not raised.
    # None is "not given": the schedule's declaration applies the defaults (overlap "skip",
    # catch_up 1), and an option given without cron or every can be told apart and refused.
    cron: str | None = None
    cron_timezone: str | None = None
    every: timedelta | None = None
    overlap: Overlap | None = None
    catch_up: int | None = None
    # Metadata stored with each job (``.using(meta={...})``), read in the worker as
    # ``context.meta``; hooks' ``before_enqueue`` may add to it. Not hashed: a dict.
    meta: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def is_scheduled(self) -> bool:
        return self.cron is not None or self.every is not None

    @property
    def schedule_options(self) -> list[str]:
        """The periodic options given besides ``cron``/``every``, by name (without either they
        schedule nothing: a mistake the checks report, leasequeue.E020)."""
        return [name for name in SCHEDULE_OPTIONS if getattr(self, name) is not None]

    def using(
        self,
        *,
        priority: int | None = None,
        queue_name: str | None = None,
        run_after: Any = None,
        backend: str | None = None,
        max_attempts: int | None = None,
        timeout: Duration = None,
        backoff_seconds: Duration = None,
        unique_key: UniqueKey = None,
        expires_after: Duration = None,
        unique_for: Duration = None,
        meta: Mapping[str, Any] | None = None,
        **limits: Any,
    ) -> "LeaseTask":
        """Create a new task with modified defaults (Django's options plus ours, flow-control
        limits included). ``meta`` replaces the task's metadata (a dict of JSON values)."""
        unknown = sorted(set(limits) - set(FLOW_OPTIONS))
        if unknown:
            raise TypeError(f"using() got unknown options {unknown}.")
        if meta is not None and not isinstance(meta, Mapping):
            raise TypeError(f"using(meta=...) takes a dict, not {type(meta).__name__}.")
        # Django's using() returns a modified copy of self: a LeaseTask here.
        task: LeaseTask = Task.using(  # type: ignore[assignment]
            self, priority=priority, queue_name=queue_name, run_after=run_after, backend=backend
        )
        extra = {
            "max_attempts": max_attempts,
            "timeout": timeout,
            "backoff_seconds": backoff_seconds,
            "unique_key": unique_key,
            "expires_after": expires_after,
            "unique_for": unique_for,
            "meta": None if meta is None else dict(meta),
            **limits,
        }
        changes = {name: value for name, value in extra.items() if value is not None}
        return replace(task, **changes) if changes else task

    def unique_key_for(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> object:
        """The call's unique key: the string given, or what the callable returns for these
        arguments (the backend refuses anything but a string, naming ``unique_key``)."""
        if callable(self.unique_key):
            return self.unique_key(*args, **kwargs)
        return self.unique_key


# The periodic options that only mean something with ``cron`` or ``every``.
SCHEDULE_OPTIONS = ("cron_timezone", "overlap", "catch_up")

# The flow-control options, as ``using()`` accepts them by name.
FLOW_OPTIONS = (
    "concurrency",
    "concurrency_key",
    "rate_limit",
    "rate_limit_key",
    "max_pending",
    "max_pending_key",
)


@overload
def task(
    function: Callable[..., Any],
    *,
    priority: int = ...,
    queue_name: str = ...,
    backend: str = ...,
    takes_context: bool = ...,
    max_attempts: int | None = ...,
    timeout: Duration = ...,
    backoff_seconds: Duration = ...,
    unique_key: UniqueKey = ...,
    concurrency: int | None = ...,
    concurrency_key: LimitKey = ...,
    rate_limit: str | None = ...,
    rate_limit_key: LimitKey = ...,
    max_pending: int | None = ...,
    max_pending_key: LimitKey = ...,
    expires_after: Duration = ...,
    unique_for: Duration = ...,
    max_snoozes: int = ...,
    cron: str | None = ...,
    cron_timezone: str | None = ...,
    every: timedelta | None = ...,
    overlap: Overlap | None = ...,
    catch_up: int | None = ...,
) -> LeaseTask: ...


@overload
def task(
    function: None = None,
    *,
    priority: int = ...,
    queue_name: str = ...,
    backend: str = ...,
    takes_context: bool = ...,
    max_attempts: int | None = ...,
    timeout: Duration = ...,
    backoff_seconds: Duration = ...,
    unique_key: UniqueKey = ...,
    concurrency: int | None = ...,
    concurrency_key: LimitKey = ...,
    rate_limit: str | None = ...,
    rate_limit_key: LimitKey = ...,
    max_pending: int | None = ...,
    max_pending_key: LimitKey = ...,
    expires_after: Duration = ...,
    unique_for: Duration = ...,
    max_snoozes: int = ...,
    cron: str | None = ...,
    cron_timezone: str | None = ...,
    every: timedelta | None = ...,
    overlap: Overlap | None = ...,
    catch_up: int | None = ...,
) -> Callable[[Callable[..., Any]], LeaseTask]: ...


def task(
    function: Callable[..., Any] | None = None,
    *,
    priority: int = DEFAULT_TASK_PRIORITY,
    queue_name: str = DEFAULT_TASK_QUEUE_NAME,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
    takes_context: bool = False,
    max_attempts: int | None = None,
    timeout: Duration = None,
    backoff_seconds: Duration = None,
    unique_key: UniqueKey = None,
    concurrency: int | None = None,
    concurrency_key: LimitKey = None,
    rate_limit: str | None = None,
    rate_limit_key: LimitKey = None,
    max_pending: int | None = None,
    max_pending_key: LimitKey = None,
    expires_after: Duration = None,
    unique_for: Duration = None,
    max_snoozes: int = DEFAULT_MAX_SNOOZES,
    cron: str | None = None,
    cron_timezone: str | None = None,
    every: timedelta | None = None,
    overlap: Overlap | None = None,
    catch_up: int | None = None,
) -> LeaseTask | Callable[[Callable[..., Any]], LeaseTask]:
    """Django's ``@task`` with our options; needs a LeaseQueueBackend as ``backend``.

    With ``cron`` or ``every`` the task is also a schedule (see ``django_leasequeue.schedules``).
    """
    # Django's @task hands keyword arguments it does not know to the backend's task_class
    # (LeaseTask here); django-stubs' overloads list only Django's own.
    declare = django_task(  # type: ignore[call-overload, misc]
        None,
        priority=priority,
        queue_name=queue_name,
        backend=backend,
        takes_context=takes_context,
        max_attempts=max_attempts,
        timeout=timeout,
        backoff_seconds=backoff_seconds,
        unique_key=unique_key,
        concurrency=concurrency,
        concurrency_key=concurrency_key,
        rate_limit=rate_limit,
        rate_limit_key=rate_limit_key,
        max_pending=max_pending,
        max_pending_key=max_pending_key,
        expires_after=expires_after,
        unique_for=unique_for,
        max_snoozes=max_snoozes,
        cron=cron,
        cron_timezone=cron_timezone,
        every=every,
        overlap=overlap,
        catch_up=catch_up,
    )

    def declare_and_register(func: Callable[..., Any]) -> LeaseTask:
        declared = declare(func)
        if declared.is_scheduled or declared.schedule_options:
            # Checked as a schedule, even one missing its cron/every; a module imported again
            # replaces its entry.
            _SCHEDULED[declared.module_path] = declared
        return declared

    return declare_and_register(function) if function is not None else declare_and_register


def declared_schedules() -> dict[str, LeaseTask]:
    """The scheduled tasks registered so far in this process, by path."""
    return _SCHEDULED
