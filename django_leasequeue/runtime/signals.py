"""Django's ``task_started`` / ``task_finished`` signals, sent from the worker in batches.

Receivers may use the ORM, so they cannot run on the event loop; one thread hop per job and
signal (what ``Signal.asend`` does for sync receivers) is the largest fixed cost of a short job.
Signals queued while a batch is being sent go out together in the next hop, in order.
"""

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.dispatch import Signal
from django.tasks import TaskResult

logger = logging.getLogger(__name__)


class SignalDispatcher:
    def __init__(self, sender: type) -> None:
        self._sender = sender
        self._pending: list[tuple[Signal, TaskResult]] = []
        self._wake = asyncio.Event()

    def emit(self, signal: Signal, task_result: TaskResult) -> None:
        self._pending.append((signal, task_result))
        self._wake.set()

    async def run(self) -> None:
        """Send queued signals until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            await sync_to_async(self._send, thread_sensitive=True)(batch)

    def _send(self, batch: list[tuple[Signal, TaskResult]]) -> None:
        for signal, task_result in batch:
            for receiver, response in signal.send_robust(self._sender, task_result=task_result):
                if isinstance(response, Exception):
                    logger.error(
                        "Receiver %r of a task signal failed for job %s.",
                        receiver,
                        task_result.id,
                        exc_info=response,
                    )
