"""One claimed job's attempt in the caller's process, as a worker's runner makes it
(``runtime/worker.py``): upstream results, the task resolved, ``task_started``, a
``JobContext``, the hooks' ``wrap_run`` around the call, the outcome written fenced by the
lease, ``task_finished``, then the hooks' ``after_finish``.

What is the worker's is shared, not copied: resolving the task and binding its arguments, the
rules that turn a return value or an exception into an attempt's end (``runtime/execution``),
the writes of each end and their fallbacks (``runtime/outcomes``), an async task's call within
its timeout, the context and its value checks. What differs is where things run: on Django's
connection in the caller's thread (the test's transaction), statements at the drain's clock
(``sql/clock.py``), a sync task called right here, an async one on an event loop of its own
whose database calls come back to this thread. A sync task's timeout cannot stop it here: an
attempt that returns after its timeout ends as one stopped at it would (``JobTimeout``).
"""

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from django.dispatch import Signal

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.choices import JobStatus
from django_leasequeue.hooks import FinishOutcome, call_after_finish, call_wrapped
from django_leasequeue.runtime.context import JobContext
from django_leasequeue.runtime.execution import (
    AttemptEnd,
    call_args,
    call_on_loop,
    ended_by,
    ended_with,
    error_of,
    is_async,
    task_or_reason,
    timed_out,
)
from django_leasequeue.runtime.outcomes import (
    attempt_result,
    fail_write,
    snooze_write,
    too_many_snoozes,
)
from django_leasequeue.runtime.workflow_steps import upstream_applied
from django_leasequeue.schedules.scheduled_at import call_kwargs
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import workflows as workflows_sql
from django_leasequeue.sql.clock import at_clock
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.queue_control import expire_doomed
from django_leasequeue.sql.records import ClaimedJob, NextRun
from django_leasequeue.sql.statement import Statement
from django_leasequeue.task_signals import send_task_signal, wanted
from django_leasequeue.tasks_framework import Task, TaskResultStatus, task_finished, task_started
from django_leasequeue.testing.backends import backend_of
from django_leasequeue.testing.drain_handle import DrainHandle
from django_leasequeue.testing.savepoint import savepoint_on_first_statement

logger = logging.getLogger(__name__)

Wrappers = tuple[tuple[str, Callable[[Any, Any], Any]], ...]


@dataclass(frozen=True, slots=True)
class Ran:
    """An attempt made: how it ended, what was written (None: its lease was lost, nothing
    was), and the exception behind a failure or a snooze (what the task raised, or why it
    could not run)."""

    end: AttemptEnd
    outcome: FinishOutcome | None
    exception: BaseException | None = None


class Attempts:
    """Makes attempts of claimed jobs, one at a time, in the caller's thread, on the job
    database of ``backend``; each job with the options and hooks of the backend it was
    enqueued through, its statements at the clock of its claim. ``retry``: False for
    ``run_job``, whose one attempt is never retried."""

    def __init__(self, backend: LeaseQueueBackend, *, retry: bool = True) -> None:
        self.default_backend = self.backend = backend
        self.sender: type = type(backend)
        self.database = backend.config.database
        self.clock = datetime.min
        self.retry = retry
        # Whether Django's task signals reach a receiver, read once (a worker reads it once per
        # claimed batch).
        self._wanted: dict[tuple[Signal, type], bool] = {}

    def run(self, job: ClaimedJob, clock: datetime) -> Ran:
        """Make an attempt of ``job``, claimed at ``clock``."""
        self.clock = clock
        self.backend = backend = backend_of(job.backend, self.default_backend)
        self.sender = type(backend)
        handle = DrainHandle(
            job,
            database=self.database,
            clock=self.clock,
            max_value_bytes=backend.config.max_argument_bytes,
        )
        upstream = None
        if job.upstream is not None:  # a chain or chord step: its arguments start with them
            job, upstream = self._with_upstream(job)
        task = task_or_reason(job)
        if isinstance(task, Exception):  # it cannot run: why, as a worker records it
            end = AttemptEnd(error=error_of(task), retryable=False)
            return Ran(end, self._record(handle, None, end), task)
        hooks = backend.hooks
        context = None
        send_started = self._wants(task_started)
        if task.takes_context or send_started or hooks.wrap_run:
            running = attempt_result(job, task, TaskResultStatus.RUNNING, backend.alias)
            if send_started:
                send_task_signal(task_started, self.sender, running)
            if task.takes_context or hooks.wrap_run:  # a hook's wrap_run gets the context too
                if task.takes_context and upstream is None and job.workflow_id is not None:
                    job, upstream = self._with_upstream(job)
                context = JobContext(
                    task_result=running,
                    handle=handle,
                    database=self.database,
                    upstream_results=upstream or {},
                )
        end, raised = self._call(task, job, context, hooks.wrap_run)
        if handle.refused is not None:  # a checkpoint or progress it could not save
            end, raised = (
                AttemptEnd(error=error_of(handle.refused), retryable=False),
                handle.refused,
            )
        if not self.retry and not end.succeeded:
            end = dataclasses.replace(end, retryable=False)
        outcome = self._record(handle, task, end)
        if outcome is not None and hooks.after_finish:
            call_after_finish(hooks, handle.job, outcome)
        return Ran(end, outcome, raised)

    def _wants(self, signal: Signal) -> bool:
        key = (signal, self.sender)
        if key not in self._wanted:
            self._wanted[key] = wanted(signal, self.sender)
        return self._wanted[key]

    def _with_upstream(self, job: ClaimedJob) -> tuple[ClaimedJob, dict[str, Any]]:
        return upstream_applied(job, execute(workflows_sql.upstream_results(job.id), self.database))

    # Calling the task

    def _call(
        self, task: Task, job: ClaimedJob, context: Any, wrappers: Wrappers
    ) -> tuple[AttemptEnd, BaseException | None]:
        """Call the task; its end, and what it raised (``savepoint_on_first_statement`` keeps
        the caller's transaction going when a statement of the task's fails)."""
        args = call_args(task, context, job)
        kwargs = call_kwargs(task, job.kwargs)
        started = time.monotonic()
        max_bytes = self.backend.config.max_argument_bytes
        try:
            with savepoint_on_first_statement(self.database):
                if is_async(task):
                    value = async_to_sync(call_on_loop)(
                        task.func, args, kwargs, job, context, wrappers
                    )
                elif wrappers:
                    value = call_wrapped(
                        wrappers, job, context, partial(task.func, *args, **kwargs)
                    )
                else:
                    value = task.func(*args, **kwargs)
        except Exception as exc:
            end = ended_by(exc, job.timeout_seconds)
            if isinstance(exc, TimeoutError):
                return end, timed_out(job.timeout_seconds, exc)
            return end, exc
        seconds = job.timeout_seconds
        if seconds is not None and time.monotonic() - started > seconds:
            timeout = timed_out(seconds)
            return AttemptEnd(error=error_of(timeout)), timeout
        return ended_with(value, max_bytes), None

    # Writing its end

    def _write[T](self, statement: Statement[T]) -> T:
        return execute(at_clock(statement, self.clock), self.database)

    def _record(
        self, handle: DrainHandle, task: Task | None, end: AttemptEnd
    ) -> FinishOutcome | None:
        """Write the attempt's end as ``OutcomeRecorder.record`` does; the outcome written, or
        None when the lease was lost."""
        job = handle.job
        if end.snooze_seconds is not None and task is not None and not handle.completed_in_fence:
            return self._snooze(handle, task, end.snooze_seconds)
        if handle.completed_in_fence:
            status = JobStatus.SUCCEEDED
        elif end.succeeded:
            if not self._write(jobs_sql.complete(handle.lease, end.return_value)):
                return self._lost(job)
            status = JobStatus.SUCCEEDED
        else:
            failed = self._write(
                fail_write(handle.lease, end, self.backend.config.backoff_cap_seconds)
            )
            if failed is None:
                return self._lost(job)
            status = self._after_next_run(job, failed)
        self._finished(job, task, status, end)
        return FinishOutcome(status)

    def _snooze(self, handle: DrainHandle, task: Task, seconds: float) -> FinishOutcome | None:
        job = handle.job
        snoozed = self._write(snooze_write(handle.lease, task, seconds))
        if snoozed is None:
            return self._lost(job)
        status = JobStatus(snoozed.status)
        # Failed: past max_snoozes (the statement recorded it); else cancelled, or expired.
        end = too_many_snoozes(task) if status == JobStatus.FAILED else AttemptEnd()
        if status == JobStatus.QUEUED:
            if self._after_next_run(job, snoozed) == JobStatus.QUEUED:
                return FinishOutcome.SNOOZED
            status = JobStatus.FAILED
        self._finished(job, task, status, end)
        return FinishOutcome(status)

    def _after_next_run(self, job: ClaimedJob, next_run: NextRun) -> JobStatus:
        """The job's status after a retry or snooze was set; one set past the job's expiry
        ends it expired at once, as in a worker."""
        if next_run.doomed and self._write(expire_doomed([job.id])):
            return JobStatus.FAILED
        return JobStatus(next_run.status)

    def _finished(
        self, job: ClaimedJob, task: Task | None, status: JobStatus, end: AttemptEnd
    ) -> None:
        if task is None or status == JobStatus.RETRYING or not self._wants(task_finished):
            return
        result = attempt_result(
            job,
            task,
            status.django_status,
            self.backend.alias,
            errors=[end.error] if end.error else [],
            return_value=end.return_value,
        )
        send_task_signal(task_finished, self.sender, result)

    @staticmethod
    def _lost(job: ClaimedJob) -> None:
        logger.warning("Job %s: lease lost before its outcome was written; discarded.", job.id)
