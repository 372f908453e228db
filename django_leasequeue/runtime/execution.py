"""Run one claimed job: resolve its task, check its arguments, call it, classify the outcome."""

import asyncio
import functools
import inspect
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django_leasequeue import jsonargs
from django_leasequeue.exceptions import (
    JobTimeout,
    Snooze,
    UndecodableJob,
    UnknownTask,
    UnstorableValue,
)
from django_leasequeue.hooks import acall_wrapped, call_wrapped
from django_leasequeue.results import task_for_path
from django_leasequeue.runtime.job_connections import close_old_job_connections
from django_leasequeue.runtime.threads import JobThreads
from django_leasequeue.schedules.scheduled_at import call_kwargs
from django_leasequeue.sql.records import ClaimedJob
from django_leasequeue.tasks_framework import Task, normalize_json


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """How an attempt ended: a JSON result, an error and whether to retry it, or a snooze."""

    result_json: str | None = None
    error: dict[str, str] | None = None
    retryable: bool = True
    return_value: Any = None
    # The task raised Snooze: run the job again in this many seconds, the attempt not counted.
    snooze_seconds: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.error is None and self.snooze_seconds is None


def error_of(exc: BaseException, message: str | None = None) -> dict[str, str]:
    """What a job's errors record of an exception; characters PostgreSQL cannot store (a NUL,
    a lone surrogate) are kept as escapes, so the job ends with its own error."""
    kind = type(exc)
    return {
        "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
        "message": jsonargs.escaped_text(message or str(exc) or kind.__name__),
        "traceback": jsonargs.escaped_text("".join(traceback.format_exception(exc))),
    }


def resolve(job: ClaimedJob) -> Task | AttemptEnd:
    """The job's Task, or a non-retryable failure saying why it cannot run."""
    found = task_or_reason(job)
    if isinstance(found, Exception):
        return AttemptEnd(error=error_of(found), retryable=False)
    return found


def task_or_reason(job: ClaimedJob) -> Task | Exception:
    """The job's Task, its arguments bound to its function's signature; or the exception its
    failure records (an undecodable row, an unknown task, arguments that do not fit)."""
    if job.problem is not None:
        return UndecodableJob(job.problem)
    shape = (job.task_path, len(job.args), tuple(job.kwargs))
    task = _RESOLVED.get(shape)
    if task is not None:
        return task
    try:
        task = task_for_path(job.task_path)
        _signature(task.func).bind(*call_args(task, None, job), **job.kwargs)
    except ImportError as exc:
        return UnknownTask(str(exc))
    except TypeError as exc:
        return TypeError(f"Arguments do not match {job.task_path}: {exc}")
    if len(_RESOLVED) < _RESOLVED_LIMIT:
        _RESOLVED[shape] = task
    return task


# Jobs of one shape (task path, number of arguments, keyword names) import and bind alike, so
# a shape that resolved once needs neither ``import_string`` nor ``Signature.bind`` again.
_RESOLVED: dict[tuple[str, int, tuple[str, ...]], Task] = {}
_RESOLVED_LIMIT = 4096


@functools.cache
def _is_async(func: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(func)


@functools.cache
def _signature(func: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(func)


def is_async(task: Task) -> bool:
    """Whether the task's function is a coroutine function (run on an event loop)."""
    return _is_async(task.func)


def call_args(task: Task, context: Any, job: ClaimedJob) -> list[Any]:
    """The positional arguments the task's function is called with (its context first)."""
    return [context, *job.args] if task.takes_context else list(job.args)


async def run_attempt(
    task: Task,
    job: ClaimedJob,
    context: Any,
    threads: JobThreads,
    max_result_bytes: int | None = None,
    wrappers: Sequence[tuple[str, Callable[[Any, Any], Any]]] = (),
) -> AttemptEnd:
    """Call the task (coroutines on this loop, functions in ``threads``) within its timeout.

    A return value that cannot be stored (``jsonargs``: not JSON, a NUL character, a lone
    surrogate, nested too deeply, over ``max_result_bytes``) fails the attempt at once, without
    retry; so does a checkpoint or progress report the task tried to save (``UnstorableValue``),
    even if the task caught it and went on.

    ``wrappers``: the hooks' ``wrap_run`` (``hooks.call_wrapped``), around the call in a sync
    task's thread, around the call and its timeout on the loop for an async task (so that they
    see a timeout as TimeoutError).

    Cancellation (lease lost, cancel requested, shutdown) propagates to the caller.
    """
    args = call_args(task, context, job)
    kwargs = call_kwargs(task, job.kwargs)
    try:
        if wrappers:
            value = await _call_wrapped(task.func, args, kwargs, threads, job, context, wrappers)
        elif job.timeout_seconds is None:
            value = await _call(task.func, args, kwargs, threads)
        else:
            async with asyncio.timeout(job.timeout_seconds):
                value = await _call(task.func, args, kwargs, threads)
    except Exception as exc:
        return ended_by(exc, job.timeout_seconds)
    return ended_with(value, max_result_bytes)


def ended_by(exc: Exception, timeout_seconds: float | None) -> AttemptEnd:
    """How an attempt ended that raised ``exc``: a snooze, a timeout (``TimeoutError``, the
    task's timeout of ``timeout_seconds`` reached), or a failure, retried unless it is a value
    that cannot be stored."""
    if isinstance(exc, Snooze):
        return AttemptEnd(snooze_seconds=exc.seconds)
    if isinstance(exc, TimeoutError):
        return AttemptEnd(error=error_of(timed_out(timeout_seconds, exc)))
    return AttemptEnd(error=error_of(exc), retryable=not isinstance(exc, UnstorableValue))


def timed_out(timeout_seconds: float | None, cause: BaseException | None = None) -> JobTimeout:
    """The error of an attempt that ran past its timeout."""
    timeout = JobTimeout(f"Attempt ran longer than its timeout of {timeout_seconds}s.")
    timeout.__cause__ = cause
    return timeout


def ended_with(value: Any, max_result_bytes: int | None) -> AttemptEnd:
    """How an attempt ended that returned ``value``: its result as JSON, or a failure without
    retry when it cannot be stored."""
    try:
        value = normalize_json(value)
        result_json = jsonargs.encode(value, "return value", max_result_bytes)
    except UnstorableValue as exc:
        return AttemptEnd(error=error_of(exc), retryable=False)
    except (TypeError, ValueError, RecursionError) as exc:  # from normalize_json
        found = jsonargs.problem_in(value) or (str(exc), "")
        return AttemptEnd(error=error_of(UnstorableValue("return value", *found)), retryable=False)
    return AttemptEnd(result_json=result_json, return_value=value)


async def _call_wrapped(
    func: Callable[..., Any],
    args: list[Any],
    kwargs: dict[str, Any],
    threads: JobThreads,
    job: ClaimedJob,
    context: Any,
    wrappers: Sequence[tuple[str, Callable[[Any, Any], Any]]],
) -> Any:
    """``_call`` within its timeout, inside the hooks' ``wrap_run``: on the loop around the
    timeout for an async task, in the thread around the function for a sync one."""
    if _is_async(func):
        return await call_on_loop(func, args, kwargs, job, context, wrappers)
    call = partial(_call_in_thread, func, args, kwargs)
    wrapped = partial(call_wrapped, wrappers, job, context, call)
    return await _timed(job.timeout_seconds, _in_thread(wrapped, threads))


async def call_on_loop(
    func: Callable[..., Awaitable[Any]],
    args: list[Any],
    kwargs: dict[str, Any],
    job: ClaimedJob,
    context: Any,
    wrappers: Sequence[tuple[str, Callable[[Any, Any], Any]]],
) -> Any:
    """An async task's call on this loop within its timeout (``TimeoutError`` past it), inside
    the hooks' ``wrap_run`` when there are any."""
    seconds = job.timeout_seconds
    if not wrappers:
        return await _timed(seconds, func(*args, **kwargs))

    async def timed() -> Any:
        return await _timed(seconds, func(*args, **kwargs))

    return await acall_wrapped(wrappers, job, context, timed)


async def _timed(seconds: float | None, call: Awaitable[Any]) -> Any:
    if seconds is None:
        return await call
    async with asyncio.timeout(seconds):
        return await call


async def _call(
    func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], threads: JobThreads
) -> Any:
    """Await a coroutine function on this loop; run a plain function in ``threads``."""
    if _is_async(func):
        return await func(*args, **kwargs)
    return await _in_thread(partial(_call_in_thread, func, args, kwargs), threads)


def _in_thread(call: Callable[[], Any], threads: JobThreads) -> Awaitable[Any]:
    """Run ``call`` in ``threads``, in a copy of this context (the job's, for its logs)."""
    return threads.run(call)


def _call_in_thread(func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run a sync task with Django's per-request connection handling around it."""
    close_old_job_connections()
    try:
        return func(*args, **kwargs)
    finally:
        close_old_job_connections()
