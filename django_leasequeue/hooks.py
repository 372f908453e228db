"""Job hooks: classes named in ``TASKS[alias]["OPTIONS"]["hooks"]`` that take part in a job's
life, to carry context from the enqueue to the run (a tenant, a request id, a trace).

A hook class may define any of:

- ``before_enqueue(self, job)``: in the enqueuing process, inside the enqueue's transaction,
  before the row is written; it may add to ``job.meta``. Raising stops the enqueue.
- ``wrap_run(self, job, context)``: returns a context manager entered around the task's call (in
  the task's thread for a sync task, on the loop for an async one; an async task's wrapper may
  also be an async context manager). It sees the task's exception, but cannot change the
  attempt's outcome: what its ``__exit__`` returns is ignored.
- ``after_finish(self, job, outcome)`` / ``aafter_finish(self, job, outcome)``: once per attempt,
  after its outcome is written, with ``outcome`` one of ``FinishOutcome``'s values.

A hook failing in ``wrap_run`` or ``after_finish`` is logged with its name; the job and the
worker go on. Each class is imported and instantiated once per process (``load_hooks``); with
no hook configured the worker does no per-job work for hooks.
"""

import functools
import importlib.util
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from asgiref.sync import async_to_sync
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

HOOK_METHODS = ("before_enqueue", "wrap_run", "after_finish", "aafter_finish")

# The hook the ``opentelemetry`` option adds, first (its run span encloses the other hooks).
OPENTELEMETRY_HOOK = "django_leasequeue.otel.OpenTelemetryHook"
# What ``opentelemetry`` needs installed (``pip install 'django-leasequeue[otel]'``).
OPENTELEMETRY_MODULE = "opentelemetry.trace"


class FinishOutcome(StrEnum):
    """What became of an attempt, as ``after_finish`` is told (compares equal to its string)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRYING = "retrying"
    CANCELLED = "cancelled"
    SNOOZED = "snoozed"


@dataclass(frozen=True, slots=True)
class Hooks:
    """The hooks of one backend, by method, each with the dotted path it was loaded from."""

    before_enqueue: tuple[tuple[str, Callable[[Any], Any]], ...] = ()
    wrap_run: tuple[tuple[str, Callable[[Any, Any], Any]], ...] = ()
    # (path, method, whether it is the async twin)
    after_finish: tuple[tuple[str, Callable[[Any, FinishOutcome], Any], bool], ...] = ()

    def run_before_enqueue(self, jobs: Iterable[Any]) -> None:
        """Call every ``before_enqueue`` for each job; an exception propagates (no enqueue)."""
        for job in jobs:
            for _, before_enqueue in self.before_enqueue:
                before_enqueue(job)


NO_HOOKS = Hooks()


def opentelemetry_available() -> bool:
    try:
        return importlib.util.find_spec(OPENTELEMETRY_MODULE) is not None
    except ModuleNotFoundError:  # the "opentelemetry" namespace package itself is missing
        return False


def hook_paths(paths: Sequence[str], opentelemetry: bool) -> tuple[str, ...]:
    """The hooks a backend runs, in order: OpenTelemetry's first when enabled."""
    return (OPENTELEMETRY_HOOK, *paths) if opentelemetry else tuple(paths)


def hook_problem(path: str) -> str | None:
    """Why ``path`` cannot be a hook (system check ``leasequeue.E030``), or None."""
    try:
        hook_class = import_string(path)
    except ImportError as exc:
        return f"cannot be imported ({exc})"
    if not inspect.isclass(hook_class):
        return f"is a {type(hook_class).__name__}, not a class"
    if not any(callable(getattr(hook_class, name, None)) for name in HOOK_METHODS):
        return f"defines none of the hook methods ({', '.join(HOOK_METHODS)})"
    # Checked without building one: a hook is instantiated once per process (load_hooks), and
    # its __init__ may set up what must happen once (an OpenTelemetry SDK, a client).
    try:
        inspect.signature(hook_class).bind()
    except TypeError as exc:
        return f"cannot be instantiated without arguments ({exc})"
    except ValueError:  # no signature to read (a class implemented in C): let it be tried
        pass
    return None


@functools.cache
def load_hooks(paths: tuple[str, ...]) -> Hooks:
    """Import and instantiate each hook class once per process (cached by its paths)."""
    if not paths:
        return NO_HOOKS
    before, wrap, after = [], [], []
    for path in paths:
        problem = hook_problem(path)
        if problem is not None:
            raise ImproperlyConfigured(f"leasequeue OPTIONS['hooks']: {path!r} {problem}.")
        hook = import_string(path)()
        if callable(method := getattr(hook, "before_enqueue", None)):
            before.append((path, method))
        if callable(method := getattr(hook, "wrap_run", None)):
            wrap.append((path, method))
        if callable(method := getattr(hook, "aafter_finish", None)):
            after.append((path, method, True))
        elif callable(method := getattr(hook, "after_finish", None)):
            after.append((path, method, False))
    return Hooks(tuple(before), tuple(wrap), tuple(after))


# Running the wrappers around a task's call


def call_wrapped(
    wrappers: Sequence[tuple[str, Callable[[Any, Any], Any]]],
    job: Any,
    context: Any,
    call: Callable[[], Any],
) -> Any:
    """``call()`` inside every hook's ``wrap_run`` context manager, outermost first (a sync
    task's thread runs this). A wrapper that fails to enter is skipped, one that fails to exit
    is logged: the task's own return value or exception is what comes out."""
    entered = []
    for path, wrap_run in wrappers:
        try:
            manager = wrap_run(job, context)
            manager.__enter__()
        except Exception:
            _log_failure(path, "wrap_run", job)
            continue
        entered.append((path, manager))
    try:
        value = call()
    except BaseException as exc:
        _exit(entered, job, exc)
        raise
    _exit(entered, job, None)
    return value


async def acall_wrapped(
    wrappers: Sequence[tuple[str, Callable[[Any, Any], Any]]],
    job: Any,
    context: Any,
    call: Callable[[], Awaitable[Any]],
) -> Any:
    """``call_wrapped`` on the loop for an async task: a wrapper may be an async context
    manager too."""
    entered = []
    for path, wrap_run in wrappers:
        try:
            manager = wrap_run(job, context)
            if hasattr(manager, "__aenter__"):
                await manager.__aenter__()
            else:
                manager.__enter__()
        except Exception:
            _log_failure(path, "wrap_run", job)
            continue
        entered.append((path, manager))
    try:
        value = await call()
    except BaseException as exc:
        await _aexit(entered, job, exc)
        raise
    await _aexit(entered, job, None)
    return value


def _exit(entered: list[tuple[str, Any]], job: Any, exc: BaseException | None) -> None:
    for path, manager in reversed(entered):
        try:
            manager.__exit__(*_exc_info(exc))
        except Exception:
            _log_failure(path, "wrap_run (on exit)", job)


async def _aexit(entered: list[tuple[str, Any]], job: Any, exc: BaseException | None) -> None:
    for path, manager in reversed(entered):
        try:
            if hasattr(manager, "__aexit__"):
                await manager.__aexit__(*_exc_info(exc))
            else:
                manager.__exit__(*_exc_info(exc))
        except Exception:
            _log_failure(path, "wrap_run (on exit)", job)


def _exc_info(exc: BaseException | None) -> tuple[Any, Any, Any]:
    return (None, None, None) if exc is None else (type(exc), exc, exc.__traceback__)


def _log_failure(path: str, method: str, job: Any) -> None:
    logger.exception(
        "Hook %s failed in %s for job %s (%s); the job goes on.",
        path,
        method,
        getattr(job, "id", "?"),
        getattr(job, "task_path", "?"),
    )


async def run_after_finish(
    hooks: Hooks,
    job: Any,
    outcome: FinishOutcome,
    run_in_thread: Callable[[Callable[[], Any]], Awaitable[Any]],
) -> None:
    """Call every hook's ``aafter_finish`` (on the loop) or ``after_finish`` (through
    ``run_in_thread``, which runs it in a copy of this context: it may block, say on the ORM);
    a failure is logged, never raised."""
    for path, method, is_async in hooks.after_finish:
        try:
            if is_async:
                await method(job, outcome)
            else:
                await run_in_thread(functools.partial(method, job, outcome))
        except Exception:
            _log_failure(path, "after_finish", job)


def call_after_finish(hooks: Hooks, job: Any, outcome: FinishOutcome) -> None:
    """``run_after_finish`` for a sync caller (the testing drain, in the test's thread): each
    ``after_finish`` called here, each ``aafter_finish`` through ``async_to_sync``; a failure is
    logged, never raised."""
    for path, method, is_async in hooks.after_finish:
        try:
            if is_async:
                async_to_sync(method)(job, outcome)
            else:
                method(job, outcome)
        except Exception:
            _log_failure(path, "after_finish", job)
