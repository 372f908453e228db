"""Django's Tasks framework, from wherever this Django has it: ``django.tasks`` on Django 6,
the ``django-tasks`` backport (``django_tasks``) on Django 5.2 LTS. The app imports the
framework from here only, so one codebase serves both."""

from typing import TYPE_CHECKING

import django

# The type check reads Django 6's stubs (django-stubs has none for the backport).
if TYPE_CHECKING or django.VERSION >= (6, 0):
    from django.tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        signals,
        task,
        task_backends,
    )
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import DEFAULT_TASK_PRIORITY, TaskError
    from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
    from django.utils.json import normalize_json
else:  # Django 5.2: the backport, whose two exceptions carry an "Error" suffix
    from django_tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        signals,
        task,
        task_backends,
    )

    # The backport registers the task backends' system checks (ours among them) when this
    # module is imported, which its app would do; importing it twice registers them once.
    from django_tasks import checks as _backport_checks  # noqa: F401
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import DEFAULT_TASK_PRIORITY, Task, TaskError
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.utils import normalize_json

task_enqueued = signals.task_enqueued
task_started = signals.task_started
task_finished = signals.task_finished

__all__ = [
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_PRIORITY",
    "DEFAULT_TASK_QUEUE_NAME",
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "signals",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
