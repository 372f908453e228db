"""Run one claimed job: resolve its task, check its arguments, call it, classify the outcome."""

import asyncio
import functools
import inspect
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import close_old_connections
from django.tasks import Task
from django.utils.json import normalize_json

from django_leasequeue import jsonargs
from django_leasequeue.exceptions import JobTimeout, UnknownTask
from django_leasequeue.protocol import ClaimedJob
from django_leasequeue.results import task_for_path


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an attempt ended: a JSON result, or an error and whether to retry it."""

    result_json: str | None = None
    error: dict[str, str] | None = None
    retryable: bool = True
    return_value: Any = None

    @property
    def succeeded(self) -> bool:
        return self.error is None


def error_of(exc: BaseException, message: str | None = None) -> dict[str, str]:
    kind = type(exc)
    return {
        "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
        "message": message or str(exc) or kind.__name__,
        "traceback": "".join(traceback.format_exception(exc)),
    }


def resolve(job: ClaimedJob) -> Task | Outcome:
    """The job's Task, or a non-retryable failure saying why it cannot run."""
    try:
        task = task_for_path(job.task_path)
        _signature(task.func).bind(*_call_args(task, None, job), **job.kwargs)
    except ImportError as exc:
        return Outcome(error=error_of(UnknownTask(str(exc))), retryable=False)
    except TypeError as exc:
        message = f"Arguments do not match {job.task_path}: {exc}"
        return Outcome(error=error_of(TypeError(message)), retryable=False)
    return task


@functools.cache
def _signature(func: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(func)


def _call_args(task: Task, context: Any, job: ClaimedJob) -> list[Any]:
    return [context, *job.args] if task.takes_context else list(job.args)


async def execute(task: Task, job: ClaimedJob, context: Any, threads: Executor) -> Outcome:
    """Call the task (coroutines on this loop, functions in ``threads``) within its timeout.

    Cancellation (lease lost, cancel requested, shutdown) propagates to the caller.
    """
    args = _call_args(task, context, job)
    try:
        async with asyncio.timeout(job.timeout_seconds):
            if inspect.iscoroutinefunction(task.func):
                value = await task.func(*args, **job.kwargs)
            else:
                call = partial(_call_in_thread, task.func, args, job.kwargs)
                value = await asyncio.get_running_loop().run_in_executor(threads, call)
    except TimeoutError as exc:
        timeout = JobTimeout(f"Attempt ran longer than its timeout of {job.timeout_seconds}s.")
        timeout.__cause__ = exc
        return Outcome(error=error_of(timeout))
    except Exception as exc:
        return Outcome(error=error_of(exc))
    try:
        value = normalize_json(value)
        return Outcome(result_json=jsonargs.dumps(value), return_value=value)
    except (TypeError, ValueError) as exc:
        message = f"Return value of {job.task_path} is not JSON: {exc}"
        return Outcome(error=error_of(TypeError(message)), retryable=False)


def _call_in_thread(func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run a sync task with Django's per-request connection handling around it."""
    close_old_connections()
    try:
        return func(*args, **kwargs)
    finally:
        close_old_connections()
