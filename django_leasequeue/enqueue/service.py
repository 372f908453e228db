"""``Enqueuer``: the one enqueue path. The backend's ``enqueue``/``enqueue_many``, a workflow's
steps and a schedule's ticks all go through it: each call checked (the task, its arguments, its
options' ends), its task's defaults resolved, its meta gathered (hooks' ``before_enqueue``), caps
refused past their limit, then the rows inserted (an INSERT, or COPY for a large batch) in the
caller's transaction, and after it commits, the workers woken and ``task_enqueued`` sent."""

import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from django_leasequeue import jsonargs
from django_leasequeue.conf import BackendConfig
from django_leasequeue.control import options as queue_control
from django_leasequeue.duration_rule import end_after
from django_leasequeue.enqueue.call_checks import check_arguments, check_importable
from django_leasequeue.enqueue.defaults import TaskDefaults
from django_leasequeue.exceptions import (
    InvalidDuration,
    InvalidTaskArguments,
    LimitError,
    UnstorableValue,
)
from django_leasequeue.flow import backpressure
from django_leasequeue.flow.limits import TaskLimits, limit_columns
from django_leasequeue.hooks import Hooks
from django_leasequeue.ids import uuid7_strs
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.results import build_result, result_from_row
from django_leasequeue.shown import shown
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql.executor import JobCopy, execute
from django_leasequeue.sql.queue_control import lock_unique_keys
from django_leasequeue.sql.records import LimitColumns, NewJob, TaskKey
from django_leasequeue.task import LeaseTask
from django_leasequeue.task_signals import send_task_signal, wanted
from django_leasequeue.tasks_framework import (
    InvalidTask,
    Task,
    TaskResult,
    TaskResultStatus,
    task_enqueued,
)
from django_leasequeue.wakeups import Wakeups

logger = logging.getLogger(__name__)

TaskCall = tuple[Task, Sequence[Any], Mapping[str, Any]]

# The job table's unique_key column is a varchar(255).
UNIQUE_KEY_MAX_LENGTH = 255
# Batches of at least this many jobs are written with COPY (see ``enqueue_many``).
COPY_FROM = 64
# Tasks whose validated defaults an enqueuer keeps (``.using()`` makes a new Task per call, so a
# process may see unboundedly many: past this many, it forgets them all and starts over).
KNOWN_TASKS_LIMIT = 1024


class Enqueuer:
    """The enqueue path of one backend (``backend.enqueuer``): its alias, options, wakeups and
    hooks, and how it validates a task (Django's ``validate_task``, the backend's)."""

    def __init__(
        self,
        alias: str,
        config: BackendConfig,
        wakeups: Wakeups,
        hooks: Callable[[], Hooks],
        validate: Callable[[Task], None],
    ) -> None:
        self.alias = alias
        self.config = config
        self.wakeups = wakeups
        self._hooks = hooks
        self._validate = validate
        # id(task) -> (task, its defaults): validated once per Task object, not per enqueue.
        # The entry holds the task, so its id cannot be reused while the entry exists.
        self._known_tasks: dict[int, tuple[Task, TaskDefaults]] = {}

    @property
    def hooks(self) -> Hooks:
        """The backend's hooks, loaded at their first use (not when the backend is built)."""
        return self._hooks()

    def enqueue_many(self, calls: Iterable[TaskCall]) -> list[TaskResult]:
        """Insert many jobs at once; results come back in the order of ``calls``.

        A call whose unique key is held by an unfinished job gets that job's result instead
        of a new job. Nothing is written if any call is invalid.
        """
        resolved: dict[int, TaskDefaults] = {}
        calls = list(calls)
        new_jobs = [
            self.new_job(job_id, task, args, kwargs, resolved)
            for job_id, (task, args, kwargs) in zip(uuid7_strs(len(calls)), calls, strict=True)
        ]
        if not new_jobs:
            return []
        database = self.config.database
        results: list[TaskResult | None] = [None] * len(new_jobs)
        enqueued, due = [], []
        now = timezone.now()

        def accept(index: int, job: NewJob, enqueued_at: datetime) -> None:
            results[index] = result = self.ready_result(job, enqueued_at)
            enqueued.append(result)
            run_after = job.task.run_after
            if run_after is None or run_after <= now:
                due.append((job.task.queue_name, job.id))

        capped = backpressure.capped(new_jobs, self.config.queue_limits)
        held_for = [job.task_key for job in new_jobs if job.unique_for and job.task_key]
        hooked = bool(self.hooks.before_enqueue)
        # A capped enqueue counts and inserts under its caps' locks, and keys held for a period
        # are looked up under their locks, in one transaction; hooks run in it too.
        with (
            transaction.atomic(using=database)
            if capped or held_for or hooked
            else contextlib.nullcontext()
        ):
            if hooked or any(job.meta for job in new_jobs):
                new_jobs = self.with_meta(new_jobs)
            # One INSERT (one round trip) for keyed or limited jobs and for small batches; COPY,
            # several times faster per row but two round trips, for the other jobs of a large
            # batch.
            small = len(new_jobs) < COPY_FROM
            inserts = [
                (i, job)
                for i, job in enumerate(new_jobs)
                if small or job.unique_key is not None or job.limits is not None
            ]
            if held_for:
                execute(lock_unique_keys(held_for), database)
            if capped:
                self.refuse_past_caps(new_jobs, resolved)
            if inserts:
                statement = jobs_sql.enqueue(
                    [job for _, job in inserts],
                    cached_plan=sessions_outlive_requests(connections[database].settings_dict),
                )
                inserted = execute(statement, database)
                existing = self._results_holding(
                    # An insert skips only a job whose unique key another job of its task holds.
                    [job.task_key for _, job in inserts if job.id not in inserted]  # type: ignore[misc]
                )
                for index, job in inserts:
                    row = inserted.get(job.id)
                    if row is None:
                        results[index] = existing[job.task_key]  # type: ignore[index]  # as above
                    else:
                        accept(index, job, row["enqueued_at"])
            if len(inserts) < len(new_jobs):
                with JobCopy(database) as copy:
                    write, enqueued_at = copy.write, copy.now
                    for index, job in enumerate(new_jobs):
                        if job.unique_key is None and job.limits is None:
                            write(job)  # streams: the server stores rows while we go on
                            accept(index, job, enqueued_at)
        if enqueued:
            tasks = [result.task for result in enqueued]
            transaction.on_commit(
                partial(self.after_commit, tasks, due, lambda: enqueued), using=database
            )
        return results  # type: ignore[return-value]  # every slot is filled above

    def with_meta(self, new_jobs: list[NewJob]) -> list[NewJob]:
        """The jobs after every hook's ``before_enqueue`` (which may add to ``job.meta``), each
        with its meta checked and encoded; raises InvalidTaskArguments naming a meta that cannot
        be stored. Call inside the enqueue's transaction: a hook may write, and may raise."""
        self.hooks.run_before_enqueue(new_jobs)
        return [
            job._replace(meta_json=self._meta_json(job.task_path, job.meta)) if job.meta else job
            for job in new_jobs
        ]

    def _meta_json(self, task_path: str, meta: Any) -> str:
        if not isinstance(meta, dict):
            raise InvalidTaskArguments(
                f"Cannot enqueue {task_path}: meta must be a dict, not {type(meta).__name__}."
            )
        try:
            return jsonargs.encode(meta, "meta", self.config.max_argument_bytes)
        except UnstorableValue as exc:
            where = f" at meta{exc.where}" if exc.where.startswith("[") else ""
            raise InvalidTaskArguments(
                f"Cannot enqueue {task_path}: its meta cannot be stored ({exc.problem}{where})."
            ) from None

    def refuse_past_caps(self, new_jobs: list[NewJob], resolved: dict[int, TaskDefaults]) -> None:
        """Raise QueueFull (writing nothing) when the jobs would pass a max_pending cap."""
        task_keys = [job.task_key for job in new_jobs if job.task_key is not None]
        held = (
            execute(queue_control_sql.unique_key_holders(task_keys), self.config.database)
            if task_keys
            else {}
        )
        backpressure.check(
            new_jobs,
            {defaults.task_path: defaults.flow for defaults in resolved.values()},
            self.config.queue_limits,
            held,
            self.config.database,
        )

    def ready_result(self, job: NewJob, enqueued_at: datetime) -> TaskResult:
        """The TaskResult of a job just enqueued."""
        return build_result(
            job.task,
            job_id=job.id,
            status=TaskResultStatus.READY,
            args=job.args,
            kwargs=job.kwargs,
            backend=self.alias,
            enqueued_at=enqueued_at,
        )

    def after_commit(
        self,
        enqueued: Sequence[Task],
        due: list[tuple[str, str]],
        results: Callable[[], Iterable[TaskResult]],
    ) -> None:
        """After the enqueue commits: wake workers, then Django's ``task_enqueued``.

        ``enqueued`` holds each job's task; ``results`` gives their TaskResults, built only
        when ``task_enqueued`` has a receiver that acts on it (a workflow's steps have none
        built otherwise). The jobs exist by now, so nothing here may raise into the caller: a
        failing receiver is logged, and so is a Redis that cannot be reached (workers then
        find the jobs by polling).
        """
        # Wake first: a slow task_enqueued receiver must not hold back the job's pickup.
        self.wakeups.send(due)
        if wanted(task_enqueued, type(self)):
            for result in results():
                send_task_signal(task_enqueued, type(self), result)
        metrics.enqueued((task.queue_name, task.module_path) for task in enqueued)

    def new_job(
        self,
        job_id: str,
        task: Task,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        resolved: dict[int, TaskDefaults],
        *,
        upstream_arguments: int = 0,
    ) -> NewJob:
        """A call checked and encoded, its task's options resolved (once per task in
        ``resolved``). ``upstream_arguments``: how many positional arguments a workflow step
        receives before ``args`` (its upstream results), for the signature check."""
        defaults = resolved.get(id(task))
        if defaults is None:  # tasks are immutable: validate and resolve each once
            defaults = resolved[id(task)] = self._known_defaults(task)
        args_json, kwargs_json = jsonargs.encode_arguments(
            defaults.task_path, args, kwargs, self.config.max_argument_bytes
        )
        check_arguments(task, [None] * upstream_arguments + list(args), kwargs)
        if defaults.expires_after is not None or defaults.unique_for is not None:
            _check_ends(task, defaults)
        return NewJob(
            job_id,
            task,
            defaults.task_path,
            jsonargs.decoded(args, args_json),  # normalised, like Django's results
            json.loads(kwargs_json) if kwargs else {},
            args_json,
            kwargs_json,
            defaults.max_attempts,
            defaults.timeout_seconds,
            defaults.backoff_seconds,
            # A keyed task is a LeaseTask with a unique_key.
            self._unique_key(task, args, kwargs) if defaults.keyed else None,  # type: ignore[arg-type]
            self._job_limits(defaults, task, args, kwargs) if defaults.flow else None,
            defaults.expires_after,
            defaults.unique_for,
            dict(meta) if (meta := getattr(task, "meta", None)) else {},
        )

    def _job_limits(
        self,
        defaults: TaskDefaults,
        task: Task,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
    ) -> LimitColumns | None:
        try:
            limits = defaults.flow.job_limits(  # type: ignore[union-attr]  # only called with a flow
                defaults.task_path, self.config.queue_limits.get(task.queue_name), args, kwargs
            )
        except LimitError as exc:
            raise InvalidTaskArguments(f"Cannot enqueue {defaults.task_path}: {exc}") from None
        return limit_columns(limits)

    @staticmethod
    def _unique_key(task: LeaseTask, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        key = task.unique_key_for(args, kwargs)
        if not isinstance(key, str):
            raise InvalidTaskArguments(
                f"Cannot enqueue {task.module_path}: its unique_key callable must return a "
                f"string, not {type(key).__name__} ({shown(key)})."
            )
        if len(key) > UNIQUE_KEY_MAX_LENGTH:
            raise InvalidTaskArguments(
                f"Cannot enqueue {task.module_path}: its unique key {key[:40]!r}... must be at "
                f"most {UNIQUE_KEY_MAX_LENGTH} characters (it has {len(key)})."
            )
        if (problem := jsonargs.text_problem(key)) is not None:
            raise InvalidTaskArguments(
                f"Cannot enqueue {task.module_path}: its unique key {key[:40]!r} cannot be "
                f"stored ({problem})."
            )
        return key

    def _known_defaults(self, task: Task) -> TaskDefaults:
        """``_task_defaults``, once per Task object: a task is immutable, and so is what its
        validation depends on (the backend's options, the task's import path)."""
        known = self._known_tasks.get(id(task))
        if known is not None and known[0] is task:
            return known[1]
        defaults = self._task_defaults(task)
        if len(self._known_tasks) >= KNOWN_TASKS_LIMIT:
            self._known_tasks.clear()
        self._known_tasks[id(task)] = (task, defaults)
        return defaults

    def task_defaults(self, task: Task) -> TaskDefaults:
        """What every job of ``task`` stores, validated (a schedule's tick inserts its job in
        the statement that fires it, with these)."""
        return self._task_defaults(task)

    def _task_defaults(self, task: Task) -> TaskDefaults:
        """Validate the task; what its jobs store, the backend's defaults filled in."""
        self._validate(task)
        if task.backend != self.alias:
            raise InvalidTask(f"Task {task.module_path} is for backend {task.backend!r}.")
        check_importable(task)
        queue_limited = task.queue_name in self.config.queue_limits
        if not isinstance(task, LeaseTask):
            return TaskDefaults(
                task.module_path,
                self.config.max_attempts,
                None,
                self.config.backoff_seconds,
                False,
                TaskLimits() if queue_limited else None,
            )
        flow = TaskLimits.of(task)
        return TaskDefaults(
            task.module_path,
            task.max_attempts or self.config.max_attempts,
            queue_control.duration_seconds(task.timeout, "timeout"),
            queue_control.duration_seconds(task.backoff_seconds, "backoff_seconds")
            or self.config.backoff_seconds,
            task.unique_key is not None,
            flow if queue_limited or flow != TaskLimits() else None,
            queue_control.duration_seconds(task.expires_after, "expires_after"),
            queue_control.duration_seconds(task.unique_for, "unique_for"),
        )

    def _results_holding(self, task_keys: list[TaskKey]) -> dict[TaskKey, TaskResult]:
        """Results of the jobs that hold these tasks' unique keys (they won the insert):
        unfinished ones, or with ``unique_for``, those within their period whatever their
        status."""
        if not task_keys:
            return {}
        rows = execute(queue_control_sql.unique_key_holders(task_keys), self.config.database)
        missing = set(task_keys) - set(rows)
        if missing:
            # The holder finished between our insert and this read: the caller may simply retry.
            keys = sorted(key for _, key in missing)
            raise InvalidTask(f"Unique key(s) {keys} changed hands; enqueue again.")
        return {task_key: result_from_row(row) for task_key, row in rows.items()}


def _check_ends(task: Task, defaults: TaskDefaults) -> None:
    """Refuse a period that would end past the last moment a job row holds: ``expires_after``
    counts from the job's ``run_after``, ``unique_for`` from now."""
    now = timezone.now()
    for name, seconds, start in (
        ("expires_after", defaults.expires_after, task.run_after or now),
        ("unique_for", defaults.unique_for, now),
    ):
        if seconds is None:
            continue
        try:
            end_after(start, seconds)
        except ValueError as exc:
            raise InvalidDuration(f"Cannot enqueue {task.module_path}: {name} {exc}.") from None


def sessions_outlive_requests(settings_dict: Mapping[str, Any]) -> bool:
    """Whether Django keeps a database's connections (its ``DATABASES`` entry) across requests:
    ``CONN_MAX_AGE``, or a pool. Only then does a plan cached in the session pay for itself: on
    a new session, the first call of a PL/pgSQL function loads the language and compiles it
    (the first plain enqueue: 2.6 ms through the function against 1.6 ms through the INSERT,
    p50)."""
    return settings_dict["CONN_MAX_AGE"] != 0 or bool(settings_dict["OPTIONS"].get("pool"))
