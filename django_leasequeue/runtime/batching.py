"""Group commit: items queued while a batch is being processed go out together in the next one."""

import asyncio
from abc import ABC, abstractmethod


class Batcher[T](ABC):
    """Collects items from many coroutines and hands them to ``process`` in arrival order.

    No timer: a batch is as large as what arrived during the previous batch, so an idle
    batcher adds no latency and a busy one amortises each round trip over many items.
    """

    def __init__(self) -> None:
        self._pending: list[T] = []
        self._wake = asyncio.Event()
        self._stopping = False

    def add(self, item: T) -> None:
        self._pending.append(item)
        self._wake.set()

    async def run(self) -> None:
        """Process batches until ``stop()``; what was added before it still goes out.

        Cancelling ``run`` instead may drop the batch being processed (a cancelled thread hop
        never runs its function): a worker stops its batchers, it does not cancel them."""
        while not self._stopping or self._pending:
            await self._wake.wait()
            self._wake.clear()
            await self.flush()

    def stop(self) -> None:
        """End ``run`` once everything added so far is processed."""
        self._stopping = True
        self._wake.set()

    async def flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            await self.process(batch)

    @abstractmethod
    async def process(self, batch: list[T]) -> None: ...
