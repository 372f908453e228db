"""Django ``TaskResult`` objects for jobs: one builder, whether the job was just enqueued,
claimed by a worker, or read back from the table."""

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.module_loading import import_string

from django_leasequeue.choices import JobStatus
from django_leasequeue.tasks_framework import Task, TaskError, TaskResult, TaskResultStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseTaskResult(TaskResult):  # type: ignore[misc]  # django-stubs: not frozen; Django's is
    """Django's TaskResult, for args and kwargs that are decoded JSON already.

    Django's ``__post_init__`` normalises them into JSON types again. Ours always come out of
    ``json.loads`` or a jsonb column, where that is a no-op costing about two thirds of
    building the result, and bulk enqueue builds one per job.
    """

    def __post_init__(self) -> None:
        pass


def build_result(
    task: Task,
    *,
    job_id: str,
    status: TaskResultStatus,
    args: list[Any],
    kwargs: dict[str, Any],
    backend: str,
    enqueued_at: datetime | None,
    started_at: datetime | None = None,
    last_attempted_at: datetime | None = None,
    finished_at: datetime | None = None,
    errors: Iterable[dict[str, Any]] = (),
    worker_ids: list[str] | None = None,
    return_value: Any = None,
) -> TaskResult:
    """The TaskResult of one job; ``return_value`` is what ``result.return_value`` gives."""
    result = LeaseTaskResult(
        task=task,
        id=job_id,
        status=status,
        enqueued_at=enqueued_at,
        started_at=started_at,
        finished_at=finished_at,
        last_attempted_at=last_attempted_at,
        args=args,
        kwargs=kwargs,
        backend=backend,
        errors=task_errors(errors),
        worker_ids=worker_ids if worker_ids is not None else [],
    )
    if return_value is not None:
        object.__setattr__(result, "_return_value", return_value)
    return result


def result_from_row(row: dict[str, Any]) -> TaskResult:
    """The TaskResult of a job row read with ``sql.reads.job_results`` (jsonb as text).

    A column that cannot be decoded (a row written around enqueue's checks) reads as empty,
    so that the job's status and errors can still be read.
    """
    status = JobStatus(row["status"])
    task = task_for_path(row["task_path"]).using(
        priority=row["priority"],
        queue_name=row["queue_name"],
        run_after=row["run_after"],
        backend=row["backend"],
    )
    return build_result(
        task,
        job_id=str(row["id"]),
        status=status.django_status,
        args=_decoded(row["args"], list),
        kwargs=_decoded(row["kwargs"], dict),
        backend=row["backend"],
        enqueued_at=row["enqueued_at"],
        started_at=row["started_at"],
        last_attempted_at=row["last_attempted_at"],
        finished_at=row["finished_at"],
        errors=_decoded(row["errors"], list),
        worker_ids=_decoded(row["worker_ids"], list),
        return_value=(
            _decoded(row["result"], object)
            if status == JobStatus.SUCCEEDED and row["result"] is not None
            else None
        ),
    )


def _decoded[T](text: str, kind: type[T]) -> T:
    """``json.loads(text)`` when it gives a ``kind``; else an empty ``kind`` (None for object)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, kind):
        return value
    return kind() if kind is not object else None  # type: ignore[return-value]


def task_for_path(task_path: str) -> Task:
    """Import the Task a job names; raises ImportError with the reason when it cannot."""
    try:
        task = import_string(task_path)
    except ImportError as exc:
        raise ImportError(f"Task {task_path!r} cannot be imported: {exc}") from exc
    if not isinstance(task, Task):
        raise ImportError(
            f"{task_path!r} is a {type(task).__name__}, not a Task: decorate it with @task."
        )
    return task


@functools.lru_cache(maxsize=1024)
def task_variant(task: Task, priority: int, queue_name: str, backend: str) -> Task:
    """``task.using(...)`` validates the task again: do it once per variant, not per job."""
    return task.using(priority=priority, queue_name=queue_name, backend=backend)


def task_errors(errors: Iterable[dict[str, Any]]) -> list[TaskError]:
    """Django's TaskError has no message field: keep it readable inside the traceback."""
    return [
        TaskError(
            exception_class_path=str(error.get("exception_class_path", "")),
            traceback=str(error.get("traceback") or error.get("message", "")),
        )
        for error in errors
        if isinstance(error, dict)
    ]
