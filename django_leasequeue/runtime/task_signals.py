"""Django's task signals (``task_started``, ``task_finished``), sent from the worker in batches.

Receivers may use the ORM, so they cannot run on the event loop; one thread hop per job and
signal (what ``Signal.asend`` does for sync receivers) is the largest fixed cost of a short job.
Signals queued while a batch is being sent go out together in the next hop, in order.
"""

import logging

from asgiref.sync import sync_to_async
from django.dispatch import Signal
from django.tasks import TaskResult

from django_leasequeue.runtime.batching import Batcher

logger = logging.getLogger(__name__)

_Emission = tuple[Signal, TaskResult]


class TaskSignalDispatcher(Batcher[_Emission]):
    def __init__(self, sender: type) -> None:
        super().__init__()
        self._sender = sender

    def emit(self, signal: Signal, task_result: TaskResult) -> None:
        self.add((signal, task_result))

    async def process(self, batch: list[_Emission]) -> None:
        await sync_to_async(self._send, thread_sensitive=True)(batch)

    def _send(self, batch: list[_Emission]) -> None:
        for signal, task_result in batch:
            for receiver, response in signal.send_robust(self._sender, task_result=task_result):
                if isinstance(response, Exception):
                    logger.error(
                        "Receiver %r of a task signal failed for job %s.",
                        receiver,
                        task_result.id,
                        exc_info=response,
                    )
