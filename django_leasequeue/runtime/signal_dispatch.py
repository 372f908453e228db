"""Django's task signals (``task_started``, ``task_finished``), sent from the worker in batches
(``task_signals`` sends each one).

Receivers may use the ORM, so they cannot run on the event loop; one thread hop per job and
signal (what ``Signal.asend`` does for sync receivers) is the largest fixed cost of a short job.
Signals queued while a batch is being sent go out together in the next hop, in order.

Django's logging receiver logs a FAILED task at ERROR; a cancelled job is FAILED to Django, yet
someone asked for it: the worker logs it as cancelled at INFO and drops Django's ERROR line for
it.
"""

import logging

from asgiref.sync import sync_to_async
from django.dispatch import Signal

from django_leasequeue.runtime import job_logging
from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.task_signals import send_task_signal
from django_leasequeue.tasks_framework import TaskResult
from django_leasequeue.tasks_framework import signals as django_task_signals

logger = logging.getLogger(__name__)

_Emission = tuple[Signal, TaskResult, bool]


class _CancelledJobsFilter(logging.Filter):
    """Drops Django's ERROR line for the jobs being reported cancelled (``ids``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        # Django's line: "Task id=%s path=%s state=%s" with the TaskResult's id first.
        return not (
            record.levelno >= logging.ERROR
            and isinstance(record.args, tuple)
            and record.args
            and str(record.args[0]) in self.ids
        )


class TaskSignalDispatcher(Batcher[_Emission]):
    def __init__(self, sender: type) -> None:
        super().__init__()
        self._sender = sender
        self._cancelled = _CancelledJobsFilter()
        django_task_signals.logger.addFilter(self._cancelled)

    def emit(self, signal: Signal, task_result: TaskResult, *, cancelled: bool = False) -> None:
        """Queue a signal; ``cancelled`` marks a FAILED result that is a cancelled job."""
        self.add((signal, task_result, cancelled))

    async def process(self, batch: list[_Emission]) -> None:
        await sync_to_async(self._send, thread_sensitive=True)(batch)

    def _send(self, batch: list[_Emission]) -> None:
        for signal, task_result, cancelled in batch:
            if cancelled:
                self._cancelled.ids.add(task_result.id)
            try:
                with job_logging.about(_fields(task_result)):
                    send_task_signal(signal, self._sender, task_result)
            finally:
                self._cancelled.ids.discard(task_result.id)


def _fields(task_result: TaskResult) -> job_logging.JobLogFields:
    """The job a signal is about, for its receivers' log records (Django logs each job)."""
    task = task_result.task
    return job_logging.JobLogFields(
        str(task_result.id), task.module_path, task.queue_name, len(task_result.worker_ids)
    )
