"""How an attempt's end is written: success (group-committed), failure (retry with backoff, or
dead letter), snooze, cancel, or the lease handed back at shutdown; each one fenced by the
lease, then told to metrics, to pages watching the job and to Django's ``task_finished``
receivers."""

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import psycopg

from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import BackendConfig
from django_leasequeue.exceptions import InvalidDuration, TooManySnoozes, UnstorableValue
from django_leasequeue.hooks import FinishOutcome
from django_leasequeue.jsonargs import escaped_text
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.results import build_result, task_variant
from django_leasequeue.runtime.completions import CompletionBatcher
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.execution import AttemptEnd, error_of
from django_leasequeue.runtime.job_handle import JobHandle, StopReason
from django_leasequeue.runtime.signal_dispatch import TaskSignalDispatcher
from django_leasequeue.runtime.workflow_steps import ReleasedStepsWaker
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.queue_control import expire_doomed, snooze
from django_leasequeue.sql.records import ClaimedJob, Lease, NextRun
from django_leasequeue.sql.statement import Statement
from django_leasequeue.task import DEFAULT_MAX_SNOOZES
from django_leasequeue.task_signals import wanted
from django_leasequeue.tasks_framework import (
    Task,
    TaskResult,
    TaskResultStatus,
    task_finished,
    task_started,
)
from django_leasequeue.wakeups import Wakeups

logger = logging.getLogger(__name__)


class OutcomeRecorder:
    """Writes what became of each attempt, and sends Django's task signals about it."""

    def __init__(
        self,
        *,
        db: Database,
        backend_alias: str,
        backend_config: BackendConfig,
        wakeups: Wakeups,
        redis_calls: ThreadPoolExecutor,
        completions: CompletionBatcher,
        task_signals: TaskSignalDispatcher,
        signal_sender: type,
        released_steps: ReleasedStepsWaker,
    ) -> None:
        self.db = db
        self.backend_alias = backend_alias
        self.backend_config = backend_config
        self.wakeups = wakeups
        self.redis_calls = redis_calls
        self.completions = completions
        self.task_signals = task_signals
        self.signal_sender = signal_sender
        self.released_steps = released_steps
        # Whether Django's task signals reach a receiver; re-read for every claimed batch.
        self.send_started = self.send_finished = True

    def read_receivers(self) -> None:
        """Whether anyone listens to the task signals now (read once per claimed batch)."""
        self.send_started = wanted(task_started, self.signal_sender)
        self.send_finished = wanted(task_finished, self.signal_sender)

    def started(self, job: ClaimedJob, task: Task) -> TaskResult:
        """The job's RUNNING TaskResult; ``task_started`` is sent with it when wanted."""
        running = self.task_result(job, task, TaskResultStatus.RUNNING)
        if self.send_started:
            self.task_signals.emit(task_started, running)
        return running

    async def record(
        self, handle: JobHandle, task: Task | None, outcome: AttemptEnd
    ) -> FinishOutcome | None:
        """Write the attempt's outcome (``task`` is None when the job could not be resolved);
        returns it, as hooks' ``after_finish`` get it, or None when the lease was lost."""
        job = handle.job
        applied = False
        seconds = outcome.snooze_seconds
        if seconds is not None and task is not None and not handle.completed_in_fence:
            return await self._snooze(handle, task, seconds)
        # Recorded by the completion batcher: for a workflow step, the batch hands the steps
        # it released to the waker itself (complete_steps returns them).
        completed_in_batch = False
        if handle.completed_in_fence:
            applied, status = True, JobStatus.SUCCEEDED
        elif outcome.succeeded:
            try:
                # A success carries its result (AttemptEnd.succeeded).
                result_json: str = outcome.result_json  # type: ignore[assignment]
                applied = await self.completions.complete(
                    handle.lease, result_json, workflow_step=job.workflow_id is not None
                )
                status, completed_in_batch = JobStatus.SUCCEEDED, True
            except psycopg.Error as exc:  # refused again alone: the attempt fails, saying why
                outcome = result_refused(exc)
        if not applied and not outcome.succeeded:
            failed = await self._fail(handle, outcome)
            applied = failed is not None
            status = JobStatus(failed.status) if failed else JobStatus.FAILED
            if failed and failed.doomed and await self._expire_doomed(job, "retry"):
                status = JobStatus.FAILED
            if failed and status == JobStatus.CANCELLED:
                logger.info("Job %s (%s): cancelled.", job.id, job.task_path)
            elif failed:
                logger.log(
                    logging.WARNING if status == JobStatus.RETRYING else logging.ERROR,
                    "Job %s (%s) attempt %d failed: %s%s",
                    job.id,
                    job.task_path,
                    job.attempt,
                    outcome.error["message"],  # type: ignore[index]  # a failure carries its error
                    f"; retry at {_moment(failed.run_after)}"
                    if status == JobStatus.RETRYING
                    else "",
                )
        if not applied:
            logger.warning("Job %s: lease lost before its outcome was written; discarded.", job.id)
            metrics.stale_write(job.queue_name, job.task_path)
            return None
        if job.has_dependents and status != JobStatus.RETRYING and not completed_in_batch:
            self.released_steps.add(job.id)
        if task is not None:
            await self._finished(handle, task, status, outcome)
        else:
            metrics.finished(job.queue_name, job.task_path, status, handle.run_seconds())
            await handle.publish({"kind": "status", "status": status})
        return FinishOutcome(status)

    async def _snooze(self, handle: JobHandle, task: Task, seconds: float) -> FinishOutcome | None:
        """Write a snooze: the job queued again in ``seconds``, its attempt not counted (or
        failed past ``max_snoozes``, cancelled if a cancel was requested)."""
        job = handle.job
        try:
            snoozed = await self.db.run(snooze_write(handle.lease, task, seconds))
        except psycopg.DataError as exc:  # Snooze checks its duration: a clock far ahead?
            return await self.record(handle, task, snooze_refused(seconds, exc))
        if snoozed is None:
            logger.warning("Job %s: lease lost before its snooze was written; discarded.", job.id)
            metrics.stale_write(job.queue_name, job.task_path)
            return None
        status = JobStatus(snoozed.status)
        outcome = None
        if status == JobStatus.QUEUED:
            logger.info(
                "Job %s (%s) snoozed until %s.", job.id, job.task_path, _moment(snoozed.run_after)
            )
            if snoozed.doomed and await self._expire_doomed(job, "snooze"):
                status = JobStatus.FAILED
        elif status == JobStatus.FAILED:
            outcome = too_many_snoozes(task)
            message = outcome.error["message"]  # type: ignore[index]  # a failure carries its error
            logger.error("Job %s (%s) failed: %s", job.id, job.task_path, message)
        if status == JobStatus.QUEUED:
            metrics.finished(job.queue_name, job.task_path, status, handle.run_seconds())
            await handle.publish({"kind": "status", "status": status})
            return FinishOutcome.SNOOZED
        if job.has_dependents:  # ended (failed, expired or cancelled): its children may be due
            self.released_steps.add(job.id)
        await self._finished(handle, task, status, outcome)
        return FinishOutcome(status)

    async def _expire_doomed(self, job: ClaimedJob, what: str) -> bool:
        """End expired a job whose ``what`` (retry, snooze) was set past its expiry."""
        if not await self.db.run(expire_doomed([job.id])):
            return False
        logger.warning(
            "Job %s (%s) expired: its %s would start after its expiry.", job.id, job.task_path, what
        )
        metrics.expired(job.queue_name, job.task_path, also_failed=False)  # _finished counts it
        return True

    async def record_stop(self, handle: JobHandle, task: Task) -> FinishOutcome | None:
        """Write what a stopped job's ``stop_reason`` asks for: nothing when its lease was lost,
        cancelled when a cancel was requested, else (shutdown) hand it back to another worker.
        Returns the outcome written, as ``record`` (None: lost, or handed back)."""
        job = handle.job
        if handle.completed_in_fence:
            await self._finished(handle, task, JobStatus.SUCCEEDED)
            return FinishOutcome.SUCCEEDED
        elif handle.stop_reason == StopReason.LEASE_LOST:
            logger.warning("Job %s: lease lost; its outcome is discarded.", job.id)
        elif handle.stop_reason == StopReason.CANCEL_REQUESTED:
            if await self.db.run(jobs_sql.finish_cancelled(handle.lease)):
                logger.info("Job %s (%s): cancelled.", job.id, job.task_path)
                if job.has_dependents:
                    self.released_steps.add(job.id)
                await self._finished(handle, task, JobStatus.CANCELLED)
                return FinishOutcome.CANCELLED
        elif await self.db.run(jobs_sql.hand_back(handle.lease)):
            logger.info("Job %s: handed back for another worker (shutdown).", job.id)
            await asyncio.get_running_loop().run_in_executor(
                self.redis_calls, self.wakeups.push, [(job.queue_name, str(job.id))]
            )
            await handle.publish({"kind": "status", "status": JobStatus.RETRYING})
        return None

    async def _fail(self, handle: JobHandle, outcome: AttemptEnd) -> NextRun | None:
        """Record a failed attempt. Should PostgreSQL refuse the error itself, record that
        instead, so the job still ends with a reason (not "lease expired" a lease later)."""
        cap = self.backend_config.backoff_cap_seconds
        try:
            return await self.db.run(fail_write(handle.lease, outcome, cap))
        except psycopg.Error as exc:
            logger.error("Job %s: its error could not be stored (%s).", handle.job.id, exc)
            return await self.db.run(fail_write(handle.lease, outcome, cap, refused=exc))

    async def _finished(
        self, handle: JobHandle, task: Task, status: JobStatus, outcome: AttemptEnd | None = None
    ) -> None:
        job = handle.job
        metrics.finished(job.queue_name, job.task_path, status, handle.run_seconds())
        await handle.publish({"kind": "status", "status": status})
        if status == JobStatus.RETRYING or not self.send_finished:
            return
        errors = [outcome.error] if outcome and outcome.error else []
        result = self.task_result(
            handle.job,
            task,
            status.django_status,
            errors=errors,
            return_value=outcome.return_value if outcome else None,
        )
        self.task_signals.emit(task_finished, result, cancelled=status == JobStatus.CANCELLED)

    def task_result(
        self,
        job: ClaimedJob,
        task: Task,
        status: TaskResultStatus,
        *,
        errors: list[dict[str, str]] | None = None,
        return_value: object = None,
    ) -> TaskResult:
        """The TaskResult of a job this worker holds, for Django's task signals."""
        return attempt_result(
            job, task, status, self.backend_alias, errors=errors, return_value=return_value
        )


# The rules of an attempt's end that do no I/O, shared with the testing drain
# (``django_leasequeue.testing``), which writes the same statements on Django's connection.


def attempt_result(
    job: ClaimedJob,
    task: Task,
    status: TaskResultStatus,
    backend_alias: str,
    *,
    errors: list[dict[str, str]] | None = None,
    return_value: object = None,
) -> TaskResult:
    """The TaskResult of a claimed job during or after its attempt (Django's task signals, a
    context's ``task_result``); ``errors``: this attempt's, after the earlier ones."""
    return build_result(
        task_variant(task, job.priority, job.queue_name, backend_alias),
        job_id=str(job.id),
        status=status,
        args=job.args,
        kwargs=job.kwargs,
        backend=backend_alias,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        last_attempted_at=job.last_attempted_at,
        errors=[*job.errors, *(errors or [])],
        worker_ids=job.worker_ids,
        return_value=return_value,
    )


def fail_write(
    lease: Lease,
    outcome: AttemptEnd,
    backoff_cap_seconds: float,
    *,
    refused: Exception | None = None,
) -> Statement[NextRun | None]:
    """The fenced write of a failed attempt: retried after its backoff, or failed. ``refused``:
    PostgreSQL refused the error as it was, so its message is recorded cut short, saying so,
    without its traceback (the job still ends with a reason)."""
    error = outcome.error or {}  # a failure carries its error
    message, traceback = error["message"], error["traceback"]
    if refused is not None:
        message = escaped_text(f"{message[:200]} (its full error could not be stored: {refused})")
        traceback = ""
    return jobs_sql.fail(
        lease,
        retryable=outcome.retryable,
        backoff_cap_seconds=backoff_cap_seconds,
        exception_class_path=error["exception_class_path"],
        message=message,
        traceback=traceback,
    )


def result_refused(exc: Exception) -> AttemptEnd:
    """The end of an attempt whose return value PostgreSQL refused: failed, without retry."""
    refused = UnstorableValue("return value", f"PostgreSQL refused it ({exc})")
    return AttemptEnd(error=error_of(refused), retryable=False)


def max_snoozes_of(task: Task) -> int:
    return getattr(task, "max_snoozes", DEFAULT_MAX_SNOOZES)


def snooze_write(lease: Lease, task: Task, seconds: float) -> Statement[NextRun | None]:
    """The fenced write of a snooze: queued again in ``seconds``, the attempt not counted (or
    failed past the task's ``max_snoozes``, cancelled if a cancel was requested)."""
    return snooze(lease, seconds, max_snoozes=max_snoozes_of(task))


def snooze_refused(seconds: float, exc: Exception) -> AttemptEnd:
    """The end of an attempt whose snooze PostgreSQL refused (a duration it cannot store)."""
    refused = InvalidDuration(f"A snooze of {seconds:g} s cannot be stored ({exc}).")
    return AttemptEnd(error=error_of(refused))


def too_many_snoozes(task: Task) -> AttemptEnd:
    """What a job that snoozed past its ``max_snoozes`` failed with (the snooze recorded it)."""
    error = TooManySnoozes(f"Snoozed more than max_snoozes ({max_snoozes_of(task)}) times.")
    return AttemptEnd(error=error_of(error), retryable=False)


def _moment(when: datetime) -> str:
    """A moment as the log shows it: the date too, since a snooze or retry may be days away."""
    return f"{when:%Y-%m-%d %H:%M:%S %Z}".rstrip()
