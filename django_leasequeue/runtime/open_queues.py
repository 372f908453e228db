"""Which queues a worker's polls read while a queue is paused, looked up at most once per
interval.

This only picks the shape of a poll: while nothing is paused, one walk of the claim order
(``claim_batch``); while a queue is paused, each open queue's head (``claim_batch_by_queue``),
so that a paused queue's backlog is never walked. Whether a job may be claimed is never decided
here: every claim statement reads the paused queues itself, so a view a moment old costs at
most a slower poll, never a claim from a paused queue.
"""

import time
from collections.abc import Sequence

from django_leasequeue.runtime.database import Database
from django_leasequeue.sql.queue_control import open_queues


class OpenQueues:
    def __init__(self, db: Database, queues: Sequence[str] | None, *, interval: float) -> None:
        self.db = db
        self.queues = queues
        self.interval = interval
        self._open: list[str] | None = None
        self._looked_at = -interval

    async def current(self) -> list[str] | None:
        """None while no queue is paused; else the served queues that are not paused."""
        now = time.monotonic()
        if now - self._looked_at >= self.interval:
            self._looked_at = now
            self._open = (await self.db.run(open_queues(self.queues))).open
        return self._open
