"""What was enqueued: ``enqueued_jobs``, ``assert_enqueued`` and ``refute_enqueued``, read from
the job table on the caller's connection (inside a test's transaction, its uncommitted rows)."""

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import lease_queue_backend
from django_leasequeue.results import result_from_row
from django_leasequeue.shown import shown
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.statement import Row
from django_leasequeue.tasks_framework import InvalidTaskBackend, Task, TaskResult, normalize_json
from django_leasequeue.testing.backends import testing_backend

# Not started or finished: waiting for its time, a retry, a worker, or its workflow's parents.
WAITING = (JobStatus.QUEUED, JobStatus.RETRYING, JobStatus.WAITING)
# How often ``within=`` looks again.
_POLL_SECONDS = 0.02
# The jobs an assertion's message lists at most (the newest are left out).
_LISTED = 50


def enqueued_jobs(task: Task | None = None, *, queue: str | None = None) -> list[TaskResult]:
    """The TaskResults of the jobs not yet started or finished (queued, retrying, deferred,
    workflow steps waiting for their parents), oldest first: of ``task`` (any task when
    None), in ``queue`` (any when None)."""
    return [result_from_row(row) for row in _rows(task, queue, WAITING)]


def assert_enqueued(
    task: Task,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    queue: str | None = None,
    priority: int | None = None,
    count: int | None = None,
    within: float | None = None,
) -> None:
    """Pass when a job of ``task`` not yet started or finished matches (``count``: exactly
    that many do): ``args`` equal to its arguments as stored (a tuple equals a list),
    ``kwargs`` items all among its keyword arguments, its ``queue`` and ``priority``.
    ``within``: keep looking for that many seconds (rows committed meanwhile by another
    thread or process are seen too). Otherwise raise AssertionError listing the task's jobs."""
    matches = _matcher(args, kwargs, queue, priority)

    def satisfied(rows: list[Row]) -> bool:
        found = sum(map(matches, rows))
        return found > 0 if count is None else found == count

    rows = _look(task, within, satisfied)
    if not satisfied(rows):
        wanted = "a job" if count is None else f"exactly {count} job(s)"
        criteria = _criteria(args, kwargs, queue, priority)
        _fail(f"Expected {wanted} of {task.module_path}{criteria} waiting", rows)


def refute_enqueued(
    task: Task,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    queue: str | None = None,
    within: float | None = None,
) -> None:
    """``assert_enqueued``'s opposite: raise AssertionError, listing the task's jobs, when a
    job of ``task`` not yet started or finished matches; ``within``: keep watching that many
    seconds for one to appear."""
    matches = _matcher(args, kwargs, queue, None)

    def found(rows: list[Row]) -> bool:
        return any(map(matches, rows))

    rows = _look(task, within, found)
    if found(rows):
        criteria = _criteria(args, kwargs, queue, None)
        _fail(f"Expected no job of {task.module_path}{criteria} waiting", rows)


def _look(task: Task, within: float | None, done: Callable[[list[Row]], bool]) -> list[Row]:
    """The task's jobs, every status, read until ``done`` holds or ``within`` seconds passed
    (read once without it): each read is a statement of its own, which sees what other
    transactions committed before it (PostgreSQL's default isolation, read committed)."""
    deadline = time.monotonic() + (within or 0)
    while True:
        rows = _rows(task, None, None)
        if done([row for row in rows if row["status"] in WAITING]) or time.monotonic() >= deadline:
            return rows
        time.sleep(min(_POLL_SECONDS, max(0.0, deadline - time.monotonic())))


def _rows(task: Task | None, queue: str | None, statuses: Sequence[str] | None) -> list[Row]:
    statement = reads_sql.jobs_listed(None if task is None else task.module_path, queue, statuses)
    return execute(statement, _database(task))


def _database(task: Task | None) -> str:
    if task is not None:
        try:
            return lease_queue_backend(task.backend).config.database
        except InvalidTaskBackend:
            raise ImproperlyConfigured(
                f"Task {task.module_path} is for backend {task.backend!r}, which is not a "
                "LeaseQueueBackend: its jobs are not in the job table."
            ) from None
    return testing_backend().config.database


def _matcher(
    args: Sequence[Any] | None,
    kwargs: Mapping[str, Any] | None,
    queue: str | None,
    priority: int | None,
) -> Callable[[Row], bool]:
    """Whether a row (of ``_rows``) is a waiting job matching the criteria given."""
    expected_args = None if args is None else _as_stored(list(args))
    expected_kwargs = None if kwargs is None else _as_stored(dict(kwargs))

    def matches(row: Row) -> bool:
        if row["status"] not in WAITING:
            return False
        if queue is not None and row["queue_name"] != queue:
            return False
        if priority is not None and row["priority"] != priority:
            return False
        result = _decoded(row)
        if expected_args is not None and result.args != expected_args:
            return False
        return expected_kwargs is None or all(
            name in result.kwargs and result.kwargs[name] == value
            for name, value in expected_kwargs.items()
        )

    return matches


def _as_stored(value: Any) -> Any:
    """A value as a job row stores it: through JSON (tuples are lists), when it can be."""
    try:
        return normalize_json(value)
    except (TypeError, ValueError):
        return value


def _decoded(row: Row) -> TaskResult:
    decoded = row.get("_result")
    if decoded is None:
        decoded = row["_result"] = result_from_row(row)
    return decoded


def _criteria(
    args: Sequence[Any] | None,
    kwargs: Mapping[str, Any] | None,
    queue: str | None,
    priority: int | None,
) -> str:
    given = {"args": args, "kwargs": kwargs, "queue": queue, "priority": priority}
    said = ", ".join(f"{name}={value!r}" for name, value in given.items() if value is not None)
    return f" with {said}" if said else ""


def _fail(expectation: str, rows: list[Row]) -> None:
    """Raise AssertionError: the expectation, then every job of the task, finished ones
    marked so."""
    if not rows:
        raise AssertionError(f"{expectation}; it has no job at all.")
    lines = [f"{expectation}; its jobs (oldest first):"]
    for row in rows[:_LISTED]:
        result = _decoded(row)
        status = row["status"]
        finished = " (finished)" if status in JobStatus.terminal() else ""
        lines.append(
            f"  - {row['task_path']} args={shown(result.args)} kwargs={shown(result.kwargs)} "
            f"queue={row['queue_name']!r} priority={row['priority']} status={status}{finished}"
        )
    if len(rows) > _LISTED:
        lines.append(f"  ... and {len(rows) - _LISTED} more.")
    raise AssertionError("\n".join(lines))
