"""System checks of a LeaseQueueBackend's configuration, run by Django's task checks through
``LeaseQueueBackend.check()`` (``manage.py check``, and before ``runworkers`` starts)."""

from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.db import connections

from django_leasequeue.conf import BackendConfig
from django_leasequeue.exceptions import InvalidSchedule, InvalidScheduledCall
from django_leasequeue.hooks import hook_problem, opentelemetry_available
from django_leasequeue.metrics import client as metrics_client
from django_leasequeue.queue_names import queue_name_problem
from django_leasequeue.schedules.declaration import declaration_of
from django_leasequeue.schedules.discovery import scheduled_tasks


def check_backend(alias: str, config: BackendConfig) -> list[CheckMessage]:
    where = f"TASKS[{alias!r}]"
    messages: list[CheckMessage] = []
    if not apps.is_installed("django_leasequeue"):
        messages.append(
            Error(
                "django_leasequeue is not in INSTALLED_APPS, so its job table does not exist.",
                hint="Add 'django_leasequeue' to INSTALLED_APPS and run migrate.",
                id="leasequeue.E004",
            )
        )
    if config.database not in settings.DATABASES:
        messages.append(
            Error(
                f"{where} OPTIONS database {config.database!r} is not in DATABASES.",
                id="leasequeue.E002",
            )
        )
    elif connections[config.database].vendor != "postgresql":
        messages.append(
            Error(
                f"{where} needs PostgreSQL; DATABASES[{config.database!r}] is "
                f"{connections[config.database].vendor}.",
                hint="The lease protocol relies on FOR UPDATE SKIP LOCKED and jsonb.",
                id="leasequeue.E001",
            )
        )
    if config.redis_alias is not None:
        messages.extend(_check_redis_cache(where, config.redis_alias))
    if config.metrics_port is not None and not metrics_client.available():
        messages.append(
            Error(
                f"{where} OPTIONS metrics_port is set, but prometheus-client is not installed.",
                hint="pip install 'django-leasequeue[metrics]', or remove metrics_port.",
                id="leasequeue.E006",
            )
        )
    if config.metrics_port is not None and (problem := metrics_ports_problem(config, 1)):
        messages.append(
            Error(
                f"{where} OPTIONS {problem}",
                hint=f"Each worker process i serves on metrics_port + i, up to {MAX_PORT}.",
                id="leasequeue.E007",
            )
        )
    messages.extend(check_hooks(where, config))
    return messages


def check_queue_names(alias: str, queues: Iterable[object]) -> list[CheckMessage]:
    """E008: each name in ``QUEUES`` fits the job table (a longer one would fail every enqueue
    with a raw DataError)."""
    return [
        Error(
            f"TASKS[{alias!r}] QUEUES: {problem}",
            hint="Give the queue a shorter name.",
            id="leasequeue.E008",
        )
        for name in sorted(queues, key=str)
        if (problem := queue_name_problem(name)) is not None
    ]


def check_hooks(where: str, config: BackendConfig) -> list[CheckMessage]:
    """E030: each hook path imports and names a class with a hook method; E031: the
    ``opentelemetry`` option with the OpenTelemetry API installed."""
    messages: list[CheckMessage] = [
        Error(
            f"{where} OPTIONS hooks: {path!r} {problem}.",
            hint="Each hook is the dotted path of a class defining before_enqueue, wrap_run, "
            "after_finish or aafter_finish (docs/observability.md).",
            id="leasequeue.E030",
        )
        for path in config.hooks
        if (problem := hook_problem(path)) is not None
    ]
    if config.opentelemetry and not opentelemetry_available():
        messages.append(
            Error(
                f"{where} OPTIONS opentelemetry is True, but opentelemetry-api is not installed.",
                hint="pip install 'django-leasequeue[otel]', or remove the option.",
                id="leasequeue.E031",
            )
        )
    return messages


# The highest TCP port.
MAX_PORT = 65535


def metrics_ports_problem(config: BackendConfig, processes: int) -> str | None:
    """Why ``processes`` worker processes cannot each serve metrics on ``metrics_port`` plus
    their index, or None. The checks know no ``--processes``: they check the first process's
    port (E007); ``runworkers`` checks them all before it starts any."""
    port = config.metrics_port
    if port is None or port + processes - 1 <= MAX_PORT:
        return None
    if processes == 1:
        return f"metrics_port {port} is not a TCP port (1 to {MAX_PORT})."
    return (
        f"metrics_port {port} + process index {processes - 1} = {port + processes - 1} is not a "
        f"TCP port: with --processes {processes}, metrics_port must be at most "
        f"{MAX_PORT - processes + 1}."
    )


def check_job_database(alias: str, database: str, job_databases: set[str]) -> list[CheckMessage]:
    """Every lease-queue backend must keep its jobs in the same database: the admin, the progress
    views and the operator actions read one job table."""
    if len(job_databases) <= 1:
        return []
    return [
        Error(
            f"TASKS[{alias!r}] keeps its jobs in {database!r}, but the lease-queue backends "
            f"disagree: {sorted(job_databases)}.",
            hint="Give every LeaseQueueBackend the same OPTIONS['database'].",
            id="leasequeue.E005",
        )
    ]


def _check_redis_cache(where: str, redis_alias: str) -> list[CheckMessage]:
    cache: dict[str, Any] | None = settings.CACHES.get(redis_alias)
    if cache is None:
        return [
            Error(
                f"{where} OPTIONS redis_alias {redis_alias!r} is not in CACHES.",
                hint="Point it at a django-redis cache, or set it to None to poll PostgreSQL only.",
                id="leasequeue.E003",
            )
        ]
    if not cache["BACKEND"].startswith("django_redis."):
        return [
            Error(
                f"{where} OPTIONS redis_alias {redis_alias!r} uses {cache['BACKEND']}, "
                "not django-redis.",
                hint="Use django_redis.cache.RedisCache, or set redis_alias to None.",
                id="leasequeue.E003",
            )
        ]
    if "SOCKET_CONNECT_TIMEOUT" not in cache.get("OPTIONS", {}):
        return [
            Warning(
                f"CACHES[{redis_alias!r}] sets no SOCKET_CONNECT_TIMEOUT: if the Redis host "
                "becomes unreachable, enqueue waits for the operating system's connect timeout.",
                hint="Set OPTIONS['SOCKET_CONNECT_TIMEOUT'] (and SOCKET_TIMEOUT) to a few seconds.",
                id="leasequeue.W001",
            )
        ]
    return []


PROGRESS_SCRIPT = "leasequeue/progress.js"


def check_progress_script(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """W040: staticfiles cannot find the progress bar's script, so ``collectstatic`` leaves it
    out and no ``{% leasequeue_progress %}`` bar would ever move."""
    if not apps.is_installed("django.contrib.staticfiles"):
        return []  # the project serves static files its own way
    from django.contrib.staticfiles import finders

    if finders.find(PROGRESS_SCRIPT):
        return []
    return [
        Warning(
            f"staticfiles cannot find {PROGRESS_SCRIPT}: progress bars rendered by "
            "{% leasequeue_progress %} will not update live.",
            hint="Keep django.contrib.staticfiles.finders.AppDirectoriesFinder in "
            "STATICFILES_FINDERS (Django's default), or copy the app's static/leasequeue/ "
            "into one of your STATICFILES_DIRS.",
            id="leasequeue.W040",
        )
    ]


def check_schedules(alias: str) -> list[CheckMessage]:
    """Every schedule declared for the backend can tick: a valid cron expression (and time zone)
    or an interval of at least a second, valid options (and none without cron or every), and a
    function that needs no arguments but ``scheduled_at``. Imports every installed app's
    ``tasks`` module to find them."""
    messages: list[CheckMessage] = []
    for task in scheduled_tasks(alias):
        try:
            declaration = declaration_of(task)
            if declaration.catch_up > 1 and declaration.overlap == "skip":
                messages.append(
                    Warning(
                        f"Scheduled task {task.module_path}: catch_up={declaration.catch_up} with "
                        "overlap='skip' runs one missed tick: the others are skipped while it "
                        "is unfinished.",
                        hint="Use overlap='allow', or catch_up=1.",
                        obj=task.module_path,
                        id="leasequeue.W020",
                    )
                )
        except InvalidScheduledCall as exc:
            messages.append(
                Error(
                    f"Scheduled task {task.module_path}: {exc}",
                    hint="Give its other parameters defaults, or drop cron/every.",
                    obj=task.module_path,
                    id="leasequeue.E021",
                )
            )
        except InvalidSchedule as exc:
            messages.append(
                Error(
                    f"Scheduled task {task.module_path}: {exc}",
                    obj=task.module_path,
                    id="leasequeue.E020",
                )
            )
    return messages
