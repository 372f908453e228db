"""``LeaseQueueBackend``: the django.tasks backend that stores jobs in PostgreSQL."""

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple
from uuid import UUID

from django.db import transaction
from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils import timezone

from django_leasequeue import jsonargs, live, protocol
from django_leasequeue.checks import check_backend
from django_leasequeue.conf import LeaseQueueOptions
from django_leasequeue.ids import uuid7_strs
from django_leasequeue.protocol import NewJob
from django_leasequeue.task import LeaseTask
from django_leasequeue.task_result import LeaseTaskResult
from django_leasequeue.wakeup import WakeupSignals

logger = logging.getLogger(__name__)

TaskCall = tuple[Task, Sequence[Any], Mapping[str, Any]]


class _TaskDefaults(NamedTuple):
    """What every job of one task stores, resolved once per enqueue."""

    task_path: str
    max_attempts: int
    timeout_seconds: float | None
    backoff_seconds: float
    keyed: bool


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
        self.config = LeaseQueueOptions.from_options(self.options)
        self.signals = WakeupSignals(self.config.redis_alias, self.config.key_prefix)

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        if not isinstance(task, LeaseTask):
            return
        if task.max_attempts is not None and (
            not isinstance(task.max_attempts, int) or task.max_attempts < 1
        ):
            raise InvalidTask(
                f"max_attempts must be a whole number ≥ 1, not {task.max_attempts!r}."
            )
        for name in ("timeout", "backoff_seconds"):
            value = getattr(task, name)
            if value is not None and (not isinstance(value, int | float) or value <= 0):
                raise InvalidTask(f"{name} must be a positive number of seconds, not {value!r}.")
        if task.unique_key is not None and not (
            isinstance(task.unique_key, str) or callable(task.unique_key)
        ):
            raise InvalidTask("unique_key must be a string or a callable returning one.")

    def check(self, **kwargs: Any) -> list[Any]:
        return check_backend(self.alias, self.config)

    # Enqueue

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        """Insert one job in the caller's transaction; signal workers when it commits."""
        return self.enqueue_many([(task, args, kwargs)])[0]

    def enqueue_many(self, calls: Iterable[TaskCall]) -> list[TaskResult]:
        """Insert many jobs at once; results come back in the order of ``calls``.

        A call whose unique key is held by an unfinished job gets that job's result instead
        of a new job. Nothing is written if any call is invalid.
        """
        resolved: dict[int, _TaskDefaults] = {}
        calls = list(calls)
        new_jobs = [
            self._new_job(job_id, task, args, kwargs, resolved)
            for job_id, (task, args, kwargs) in zip(uuid7_strs(len(calls)), calls, strict=True)
        ]
        if not new_jobs:
            return []
        using = self.config.database
        results: list[TaskResult | None] = [None] * len(new_jobs)
        enqueued, signalled = [], []
        now = timezone.now()
        alias = self.alias

        def accept(index: int, job: NewJob, enqueued_at: datetime) -> None:
            results[index] = result = LeaseTaskResult(
                task=job.task,
                id=job.id,
                status=TaskResultStatus.READY,
                enqueued_at=enqueued_at,
                started_at=None,
                finished_at=None,
                last_attempted_at=None,
                args=job.args,
                kwargs=job.kwargs,
                backend=alias,
                errors=[],
                worker_ids=[],
            )
            enqueued.append(result)
            run_after = job.task.run_after
            if run_after is None or run_after <= now:
                signalled.append((job.task.queue_name, job.id))

        keyed = [(i, job) for i, job in enumerate(new_jobs) if job.unique_key is not None]
        if keyed:
            inserted = protocol.execute(protocol.enqueue([job for _, job in keyed]), using)
            existing = self._results_holding(
                [job.unique_key for _, job in keyed if job.id not in inserted]
            )
            for index, job in keyed:
                row = inserted.get(job.id)
                if row is None:
                    results[index] = existing[job.unique_key]
                else:
                    accept(index, job, row["enqueued_at"])
        if len(keyed) < len(new_jobs):
            with protocol.JobCopy(using) as copy:
                write, enqueued_at = copy.write, copy.now
                for index, job in enumerate(new_jobs):
                    if job.unique_key is None:
                        write(job)  # streams: the server stores rows while we go on
                        accept(index, job, enqueued_at)
        if enqueued:
            transaction.on_commit(partial(self._committed, enqueued, signalled), using=using)
        return results  # type: ignore[return-value]  (every slot is filled above)

    def _committed(self, enqueued: list[TaskResult], signalled: list[tuple[str, str]]) -> None:
        """After the enqueue commits: Django's ``task_enqueued``, then wake workers."""
        for result in enqueued:
            task_enqueued.send(type(self), task_result=result)
        self.signals.push(signalled)

    def _new_job(
        self,
        job_id: str,
        task: Task,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        resolved: dict[int, "_TaskDefaults"],
    ) -> NewJob:
        defaults = resolved.get(id(task))
        if defaults is None:  # tasks are immutable: validate and resolve each once per batch
            defaults = resolved[id(task)] = self._task_defaults(task)
        args_json, kwargs_json = jsonargs.encode_arguments(defaults.task_path, args, kwargs)
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
            task.unique_key_for(args, kwargs) if defaults.keyed else None,
        )

    def _task_defaults(self, task: Task) -> "_TaskDefaults":
        """Validate the task; what its jobs store, the backend's defaults filled in."""
        self.validate_task(task)
        if task.backend != self.alias:
            raise InvalidTask(f"Task {task.module_path} is for backend {task.backend!r}.")
        if not isinstance(task, LeaseTask):
            return _TaskDefaults(
                task.module_path, self.config.max_attempts, None, self.config.backoff_seconds, False
            )
        return _TaskDefaults(
            task.module_path,
            task.max_attempts or self.config.max_attempts,
            task.timeout,
            task.backoff_seconds or self.config.backoff_seconds,
            task.unique_key is not None,
        )

    def _results_holding(self, unique_keys: list[str | None]) -> dict[str, TaskResult]:
        """Results of the unfinished jobs that hold these unique keys (they won the insert)."""
        if not unique_keys:
            return {}
        from django_leasequeue.models import Job, JobStatus

        jobs = Job.objects.using(self.config.database).filter(
            unique_key__in=unique_keys, status__in=JobStatus.unfinished()
        )
        found = {job.unique_key: self._result_for_job(job) for job in jobs}
        missing = set(unique_keys) - set(found)
        if missing:
            # The holder finished between our insert and this read: the caller may simply retry.
            raise InvalidTask(f"Unique key(s) {sorted(missing)} changed hands; enqueue again.")
        return found

    # Results

    def get_result(self, result_id: str) -> TaskResult:
        from django_leasequeue.models import Job

        try:
            job = Job.objects.using(self.config.database).get(pk=UUID(str(result_id)))
        except (ValueError, Job.DoesNotExist):
            raise TaskResultDoesNotExist(f"No job with id {result_id!r}.") from None
        return self._result_for_job(job)

    def _result_for_job(self, job: Any) -> TaskResult:
        from django_leasequeue.results import build_task_result, task_for_path

        return build_task_result(job, task_for_path(job.task_path))

    # Operator and caller actions

    def cancel(self, result_ids: Iterable[str | UUID]) -> dict[UUID, str]:
        """Cancel jobs: unstarted ones at once, running ones at their worker's next heartbeat.

        Returns the jobs changed, each with its status now (``running`` = cancel requested).
        """
        ids = [UUID(str(result_id)) for result_id in result_ids]
        statuses = protocol.execute(protocol.cancel(ids), self.config.database)
        live.publish_statuses_on_commit(protocol.cancelled_now(statuses), self.config.database)
        return statuses
