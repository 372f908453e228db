"""A receiver of Django's task signals that appends one line per signal to a file, for tests
that need to see which signals a worker process sent. Connected only when
``LEASEQUEUE_SIGNAL_LOG`` names the file: a receiver makes the worker build a TaskResult for
every job, which other tests should not pay for."""

import os
from pathlib import Path

from django_leasequeue.tasks_framework import task_finished, task_started

ENV_VAR = "LEASEQUEUE_SIGNAL_LOG"


def _log(name: str):
    def receiver(sender, task_result, **kwargs) -> None:
        with Path(os.environ[ENV_VAR]).open("a") as file:
            file.write(f"{name} {task_result.id} {task_result.status}\n")

    return receiver


# Module-level references: signals hold their receivers weakly.
_started = _log("started")
_finished = _log("finished")


def connect_from_environment() -> None:
    if os.environ.get(ENV_VAR):
        task_started.connect(_started)
        task_finished.connect(_finished)
