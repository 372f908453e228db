"""Whether an enqueued call can work at all, checked at enqueue rather than when a worker runs it:
the task must be importable by its path, and the arguments must fit its function's signature."""

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.module_loading import import_string

from django_leasequeue.exceptions import InvalidTaskArguments
from django_leasequeue.tasks_framework import InvalidTask, Task

# Calls of one shape (function, argument count, keyword names) bind alike: cache the answer.
_SHAPES: dict[tuple[Any, bool, int, tuple[str, ...]], str | None] = {}
_SHAPES_LIMIT = 4096
_IMPORTABLE: set[str] = set()


def check_importable(task: Task) -> None:
    """Workers find a task by its path: refuse one they could not import (say, a function
    defined in ``manage.py shell`` or in a script run as ``__main__``)."""
    path = task.module_path
    if path in _IMPORTABLE:
        return
    try:
        found = import_string(path)
    except ImportError:
        found = None
    if getattr(found, "func", None) is not task.func:
        raise InvalidTask(
            f"Task {path} cannot be imported by workers from that path: define it at the top "
            "level of a module of your project (not in a shell, a script or a function)."
        )
    _IMPORTABLE.add(path)


def check_arguments(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse arguments that cannot be bound to the task function's parameters."""
    shape = (task.func, task.takes_context, len(args), tuple(kwargs))
    if shape not in _SHAPES:
        positional = [None] * (len(args) + task.takes_context)  # bind counts and names only
        try:
            inspect.signature(task.func).bind(*positional, **dict.fromkeys(kwargs))
            problem = None
        except TypeError as exc:
            problem = str(exc)
        if len(_SHAPES) < _SHAPES_LIMIT:
            _SHAPES[shape] = problem
    else:
        problem = _SHAPES[shape]
    if problem is not None:
        raise InvalidTaskArguments(
            f"Cannot enqueue {task.module_path}: the arguments do not fit its signature "
            f"{inspect.signature(task.func)} ({problem})."
        )
