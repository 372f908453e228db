"""A backend's config: the ``TASKS[alias]["OPTIONS"]`` the user wrote, validated, with defaults.

"Options" are what the user wrote; "config" is the parsed object the app reads.
"""

from collections.abc import Collection
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Self

from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS

from django_leasequeue.exceptions import LimitError
from django_leasequeue.flow.limits import QueueLimit, parse_queue_limits
from django_leasequeue.tasks_framework import InvalidTaskBackend, task_backends

if TYPE_CHECKING:
    from django_leasequeue.backend import LeaseQueueBackend


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendConfig:
    """A backend's validated configuration, parsed from what the user wrote in ``OPTIONS``.

    Its field names are the keys ``OPTIONS`` accepts; each comment is the documented default's why.
    """

    # DATABASES alias holding the job table.
    database: str = "default"
    # CACHES alias of a django-redis cache that carries wakeups; None = poll only.
    redis_alias: str | None = "default"
    # Prefix of every Redis key the backend writes.
    key_prefix: str = "leasequeue"
    # How long a claim holds a job without a heartbeat before another worker may take it.
    lease_seconds: float = 30.0
    # How often a worker renews all its leases; must be well under lease_seconds.
    heartbeat_seconds: float = 5.0
    # Attempts per job unless the task says otherwise (a crash counts as an attempt).
    max_attempts: int = 3
    # First retry delay; doubles each attempt, with jitter, up to backoff_cap_seconds.
    backoff_seconds: float = 1.0
    backoff_cap_seconds: float = 600.0
    # How long an idle worker waits on Redis (or sleeps when Redis is down) before polling SQL.
    poll_seconds: float = 1.0
    # How often each worker runs the recover sweep (expired leases, lost wakeups).
    sweep_seconds: float = 5.0
    # Due jobs left unclaimed this long get a wakeup again from the sweep.
    resignal_after_seconds: float = 10.0
    # Most rows a single recover statement touches.
    sweep_batch: int = 500
    # Minimum gap between two persisted progress updates of one job.
    progress_interval_seconds: float = 0.25
    # Server-side prepared statements in the worker; keep False behind PgBouncer < 1.21.
    prepared_statements: bool = False
    # Largest JSON encoding of one job's arguments (and of its result); None = no limit.
    max_argument_bytes: int | None = 1024 * 1024
    # Limits every job of a queue is held to: {"llm": {"concurrency": 2, "rate_limit": "30/m",
    # "max_pending": 1000}} (see the Flow control docs). Parsed into QueueLimit per queue.
    queue_limits: dict[str, QueueLimit] = field(default_factory=dict)
    # While a worker has a backlog, once per this many seconds it claims the oldest due job
    # first, whatever its priority: a low-priority job cannot starve under higher ones.
    oldest_first_seconds: float = 1.0
    # How long the row of a stopped or dead worker stays in leasequeue_worker (the Workers page).
    worker_retention_seconds: float = 86400.0
    # A bearer token that may read the metrics view (besides staff); None = staff only.
    metrics_token: str | None = None
    # Each worker process serves its own metrics on this port plus its index; None = not served
    # (use prometheus-client's multiprocess mode instead, docs/operations.md).
    metrics_port: int | None = None
    # Dotted paths of hook classes (django_leasequeue.hooks), in the order they run; each is
    # checked by leasequeue.E030 and imported once per process.
    hooks: tuple[str, ...] = ()
    # Traces from the enqueue to each attempt (docs/observability.md); needs the [otel] extra.
    opentelemetry: bool = False

    @classmethod
    def from_options(cls, options: dict[str, Any], queues: Collection[str] = ()) -> Self:
        """Build from an ``OPTIONS`` dict, refusing unknown keys and wrong types; ``queues`` are
        the backend's declared ``QUEUES`` (empty: any queue), which ``queue_limits`` must name."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ImproperlyConfigured(
                f"Unknown leasequeue OPTIONS {unknown}; valid keys are {sorted(known)}."
            )
        options = dict(options)
        if "queue_limits" in options:
            try:
                options["queue_limits"] = parse_queue_limits(options["queue_limits"], set(queues))
            except LimitError as exc:
                raise ImproperlyConfigured(f"leasequeue OPTIONS: {exc}") from None
        if "hooks" in options:
            options["hooks"] = _hook_paths(options["hooks"])
        for name, value in options.items():
            if name in ("queue_limits", "hooks"):
                continue
            problem = _value_problem(name, value, known[name].default)
            if problem:
                raise ImproperlyConfigured(
                    f"leasequeue OPTIONS[{name!r}] = {value!r} is invalid: expected {problem}."
                )
        opts = cls(**options)
        if opts.heartbeat_seconds * 2 > opts.lease_seconds:
            raise ImproperlyConfigured(
                f"leasequeue OPTIONS: heartbeat_seconds ({opts.heartbeat_seconds}) must be at most "
                f"half of lease_seconds ({opts.lease_seconds}), or leases expire between beats."
            )
        return opts


def _hook_paths(value: Any) -> tuple[str, ...]:
    """``hooks`` as a tuple of dotted paths (whether they import is a system check's job)."""
    if isinstance(value, list | tuple) and all(isinstance(p, str) and p for p in value):
        return tuple(value)
    raise ImproperlyConfigured(
        f"leasequeue OPTIONS['hooks'] = {value!r} is invalid: expected a list of dotted paths "
        "to hook classes."
    )


# Options whose None means "none" (no Redis, no limit).
_MAY_BE_NONE = {"redis_alias", "max_argument_bytes", "metrics_token", "metrics_port"}
# What options whose default is None hold otherwise (their type is checked against it).
_WHEN_SET = {"metrics_token": "token", "metrics_port": 9100}


def _value_problem(name: str, value: Any, default: Any) -> str | None:
    """Describe what ``value`` should have been, or return None when it is acceptable."""
    if value is None and name in _MAY_BE_NONE:
        return None
    default = _WHEN_SET.get(name, default)
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "True or False"
    if isinstance(default, int | float):
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(default, int) and not isinstance(value, int):
            is_number = False
        return None if is_number and value > 0 else f"a positive {type(default).__name__}"
    return None if isinstance(value, str) and value else "a non-empty string"


# Where the lease-queue backends are. A backend of ours is told apart by its BackendConfig, so
# that the modules below the backend (progress, metrics, the admin's helpers) can find the job
# table without importing the backend's module.


def lease_queue_backend(alias: str) -> "LeaseQueueBackend":
    """``TASKS[alias]``; raises InvalidTaskBackend naming the problem when it is not ours."""
    backend = task_backends[alias]  # raises InvalidTaskBackend for an unknown alias
    if not isinstance(getattr(backend, "config", None), BackendConfig):
        raise InvalidTaskBackend(
            f"TASKS[{alias!r}] is {type(backend).__name__}, not LeaseQueueBackend."
        )
    return backend  # type: ignore[return-value]  # a backend with our config is ours


def lease_queue_backends() -> list["LeaseQueueBackend"]:
    """Every backend in ``TASKS`` that is a LeaseQueueBackend (instantiating them)."""
    return [
        backend  # type: ignore[misc]  # as above
        for backend in task_backends.all()
        if isinstance(getattr(backend, "config", None), BackendConfig)
    ]


def job_database() -> str:
    """The ``DATABASES`` alias of the job table: the ``database`` option of the configured
    lease-queue backends (check ``leasequeue.E005`` makes sure they agree)."""
    databases = {backend.config.database for backend in lease_queue_backends()}
    return databases.pop() if len(databases) == 1 else DEFAULT_DB_ALIAS
