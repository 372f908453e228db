"""``LeaseQueueBackend``: the django.tasks backend that stores jobs in PostgreSQL, an adapter of
Django's API (and queue control) onto the enqueue service, the job table's reads and the
operator actions."""

from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async

from django_leasequeue import operations
from django_leasequeue.checks import (
    check_backend,
    check_job_database,
    check_queue_names,
    check_schedules,
)
from django_leasequeue.choices import CancelOutcome
from django_leasequeue.conf import BackendConfig, lease_queue_backends
from django_leasequeue.control import options as queue_control
from django_leasequeue.control import pausing
from django_leasequeue.duration_rule import LATEST_MOMENT
from django_leasequeue.enqueue.service import Enqueuer, TaskCall
from django_leasequeue.exceptions import (
    LimitError,
)
from django_leasequeue.flow.limits import TaskLimits
from django_leasequeue.hooks import Hooks, hook_paths, load_hooks
from django_leasequeue.queue_names import queue_name_problem
from django_leasequeue.results import result_from_row
from django_leasequeue.shown import shown
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.task import LeaseTask
from django_leasequeue.tasks_framework import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
)
from django_leasequeue.wakeups import Wakeups


class LeaseQueueBackend(BaseTaskBackend):
    task_class = LeaseTask

    supports_defer = True
    """Tasks may be enqueued with ``run_after``: delayed jobs are rows, not timers."""
    supports_async_task = True
    """``async def`` tasks run on the worker's event loop."""
    supports_get_result = True
    """Results are read back from the job table, from any process."""
    supports_priority = True
    """Claims take higher ``priority`` first, then the earliest ``run_after``."""

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.config = BackendConfig.from_options(self.options, self.queues)
        self.wakeups = Wakeups(self.config.redis_alias, self.config.key_prefix)
        # The one enqueue path: this backend's, its workflows' and its schedules'.
        self.enqueuer = Enqueuer(
            alias, self.config, self.wakeups, lambda: self.hooks, self.validate_task
        )

    @cached_property
    def hooks(self) -> Hooks:
        """The configured hooks (OpenTelemetry's first when enabled), imported once per process
        at first use; raises ImproperlyConfigured for a path check ``leasequeue.E030`` refuses."""
        return load_hooks(hook_paths(self.config.hooks, self.config.opentelemetry))

    def validate_task(self, task: Task) -> None:
        # Before Django's checks, whose message would repeat a long name in full.
        if (problem := queue_name_problem(task.queue_name)) is not None:
            raise InvalidTask(f"Task {task.module_path}: {problem}")
        if self.queues and task.queue_name not in self.queues:
            raise InvalidTask(
                f"Queue {shown(task.queue_name)} is not valid for backend {self.alias!r} (task "
                f"{task.module_path}): its QUEUES are {', '.join(sorted(self.queues))}."
            )
        super().validate_task(task)
        if task.run_after is not None and task.run_after > LATEST_MOMENT:
            raise InvalidTask(
                f"run_after {task.run_after:%Y-%m-%d} is after {LATEST_MOMENT:%Y-%m-%d}, the last "
                "day a job row can hold."
            )
        if not isinstance(task, LeaseTask):
            return
        if task.max_attempts is not None and (
            not isinstance(task.max_attempts, int) or task.max_attempts < 1
        ):
            raise InvalidTask(
                f"max_attempts must be a whole number ≥ 1, not {task.max_attempts!r}."
            )
        for name in ("timeout", "backoff_seconds"):
            queue_control.duration_seconds(getattr(task, name), name)
        if task.unique_key is not None and not (
            isinstance(task.unique_key, str) or callable(task.unique_key)
        ):
            raise InvalidTask("unique_key must be a string or a callable returning one.")
        try:
            TaskLimits.of(task)
        except LimitError as exc:
            raise InvalidTask(f"Task {task.module_path}: {exc}") from None
        queue_control.check(task)

    def check(self, **kwargs: Any) -> list[Any]:
        job_databases = {backend.config.database for backend in lease_queue_backends()}
        return [
            *check_backend(self.alias, self.config),
            *check_queue_names(self.alias, self.queues),
            *check_job_database(self.alias, self.config.database, job_databases),
            *check_schedules(self.alias),
        ]

    # Enqueue

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        """Insert one job in the caller's transaction; wake workers when it commits."""
        return self.enqueue_many([(task, args, kwargs)])[0]

    def enqueue_many(self, calls: Iterable[TaskCall]) -> list[TaskResult]:
        """Insert many jobs at once; results come back in the order of ``calls``.

        A call whose unique key is held by an unfinished job of its task gets that job's result
        instead of a new job. Nothing is written if any call is invalid.
        """
        return self.enqueuer.enqueue_many(calls)

    # Results

    def get_result(self, result_id: str) -> TaskResult:
        try:
            job_id = UUID(str(result_id))
        except ValueError:
            raise TaskResultDoesNotExist(f"No job with id {result_id!r}.") from None
        rows = execute(reads_sql.job_results([job_id]), self.config.database)
        if not rows:
            raise TaskResultDoesNotExist(f"No job with id {result_id!r}.")
        return result_from_row(rows[0])

    # Operator and caller actions

    def pause_queue(self, name: str, reason: str = "") -> bool:
        """Stop every worker claiming from queue ``name``, on every path, until it is resumed;
        jobs running finish, enqueues still land and wait. Once this returns no claim takes
        one of its jobs (it waits for claims in flight). Durable: kept in PostgreSQL.

        Returns False when the queue was paused already (its reason is replaced). Raises
        ValueError for a queue the backend does not declare or a reason that is not text, holds
        what PostgreSQL cannot store, or is longer than ``pausing.REASON_MAX_LENGTH`` (1,000
        characters); ``PauseFailed`` when claims in flight held the pause off for 5 s.
        """
        return pausing.pause_queue(self, name, reason)

    def resume_queue(self, name: str) -> bool:
        """Let workers claim from queue ``name`` again, waking them for its due jobs at once.
        Returns False when it was not paused."""
        return pausing.resume_queue(self, name)

    async def apause_queue(self, name: str, reason: str = "") -> bool:
        return await sync_to_async(self.pause_queue, thread_sensitive=True)(name, reason)

    async def aresume_queue(self, name: str) -> bool:
        return await sync_to_async(self.resume_queue, thread_sensitive=True)(name)

    def paused_queues(self) -> dict[str, str]:
        """``{queue: reason}`` of every paused queue."""
        return pausing.paused_queues(self)

    def cancel(self, result_ids: Iterable[str | UUID]) -> dict[UUID, CancelOutcome]:
        """Cancel jobs: unstarted ones at once, running ones at their worker's next heartbeat.

        Returns the jobs changed, each with ``CancelOutcome.CANCELLED`` (``"cancelled"``) or,
        for a running job, ``CancelOutcome.CANCEL_REQUESTED`` (``"cancel_requested"``).
        """
        return operations.cancel_jobs(result_ids, self.config.database)
