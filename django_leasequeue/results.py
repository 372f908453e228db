"""Django ``TaskResult`` objects built from job rows."""

import functools
import logging
from typing import Any

from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.utils.module_loading import import_string

from django_leasequeue.models import Job, JobStatus
from django_leasequeue.task_result import LeaseTaskResult

logger = logging.getLogger(__name__)


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


def task_errors(errors: list[dict[str, Any]]) -> list[TaskError]:
    """Django's TaskError has no message field: keep it readable inside the traceback."""
    return [
        TaskError(
            exception_class_path=error["exception_class_path"],
            traceback=error.get("traceback") or error.get("message", ""),
        )
        for error in errors
    ]


def build_task_result(job: Job, task: Task) -> TaskResult:
    task = task.using(
        priority=job.priority,
        queue_name=job.queue_name,
        run_after=job.run_after,
        backend=job.backend,
    )
    result = LeaseTaskResult(
        task=task,
        id=str(job.id),
        status=JobStatus(job.status).django_status,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        last_attempted_at=job.last_attempted_at,
        args=job.args,
        kwargs=job.kwargs,
        backend=job.backend,
        errors=task_errors(job.errors),
        worker_ids=list(job.worker_ids),
    )
    if job.status == JobStatus.SUCCEEDED:
        object.__setattr__(result, "_return_value", job.result)
    return result


@functools.lru_cache(maxsize=1024)
def _task_variant(task: Task, priority: int, queue_name: str, backend: str) -> Task:
    """``task.using(...)`` validates the task again: do it once per variant, not per job."""
    return task.using(priority=priority, queue_name=queue_name, backend=backend)


def result_from_claim(
    job: Any,
    task: Task,
    alias: str,
    *,
    status: TaskResultStatus = TaskResultStatus.RUNNING,
    errors: list[dict[str, Any]] | None = None,
    return_value: Any = None,
    finished_at: Any = None,
) -> TaskResult:
    """The TaskResult of a job a worker holds (``job`` is a protocol.ClaimedJob)."""
    task = _task_variant(task, job.priority, job.queue_name, alias)
    result = LeaseTaskResult(
        task=task,
        id=str(job.id),
        status=status,
        enqueued_at=job.enqueued_at,
        started_at=job.started_at,
        finished_at=finished_at,
        last_attempted_at=job.last_attempted_at,
        args=job.args,
        kwargs=job.kwargs,
        backend=alias,
        errors=task_errors(job.errors + (errors or [])),
        worker_ids=job.worker_ids,
    )
    object.__setattr__(result, "_return_value", return_value)
    return result
