"""The worker registry: each worker process keeps its ``leasequeue_worker`` row fresh.

The row is written on the worker's heartbeat tick (one upsert per tick, never per job), so the
Workers page and ``manage.py leasequeue status`` see host, pid, queues, jobs running and done.
A row whose heartbeat is older than the lease reads as dead; rows of workers gone for
``worker_retention_seconds`` are deleted by the live workers, at most once a minute each.
"""

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from django_leasequeue.runtime.database import Database
from django_leasequeue.sql import workers as workers_sql
from django_leasequeue.sql.executor import execute

logger = logging.getLogger(__name__)

# How often one worker deletes expired rows (every worker does it; the statement is idempotent).
_PRUNE_EVERY_SECONDS = 60.0
# How long a stopping worker waits for its row to be marked stopped.
_STOP_TIMEOUT_SECONDS = 2.0


class WorkerRegistry:
    """One worker process's row: ``beat`` on each heartbeat tick, ``stopped`` at the end.

    A beat runs in the background on the heartbeat connection and never overlaps the previous
    one: the registry must never hold up lease renewals, and a failure only costs freshness.
    """

    def __init__(
        self,
        db: Database,
        worker_id: str,
        *,
        queues: Sequence[str] | None,
        concurrency: int,
        lease_seconds: float,
        retention_seconds: float,
    ) -> None:
        self.db = db
        self.worker_id = worker_id
        self.queues = None if queues is None else list(queues)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.retention_seconds = retention_seconds
        self.started_at = datetime.now(UTC)
        # Jobs this process finished (any outcome), as the row reports them.
        self.jobs_done = 0
        self._beat: asyncio.Task | None = None
        self._pruned_at = -_PRUNE_EVERY_SECONDS
        self._failing = False

    def beat(self, jobs_running: int) -> None:
        """Refresh the row in the background (skipped while the previous beat still runs)."""
        if self._beat is not None and not self._beat.done():
            return
        self._beat = asyncio.create_task(self._write(jobs_running), name="registry-beat")

    async def register(self) -> None:
        """Write the row now (at start-up, so a new worker shows at once)."""
        await self._write(0)

    async def _write(self, jobs_running: int) -> None:
        try:
            await self.db.run(
                workers_sql.worker_beat(
                    worker_id=self.worker_id,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    queues=self.queues,
                    concurrency=self.concurrency,
                    lease_seconds=self.lease_seconds,
                    started_at=self.started_at,
                    jobs_running=jobs_running,
                    jobs_done=self.jobs_done,
                )
            )
            if time.monotonic() - self._pruned_at >= _PRUNE_EVERY_SECONDS:
                self._pruned_at = time.monotonic()
                await self.db.run(
                    workers_sql.prune_workers(retention_seconds=self.retention_seconds)
                )
        except Exception as exc:  # the registry is for operators: never stop a worker for it
            if not self._failing:
                logger.warning("Could not update this worker's registry row: %r", exc)
            self._failing = True
        else:
            self._failing = False

    async def stopped(self) -> None:
        """Mark the row stopped (best effort: without it, the row reads dead after a lease)."""
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(BaseException):
                await self._beat
        try:
            await asyncio.wait_for(
                self.db.run(workers_sql.worker_stopped(self.worker_id, ending="stopped")),
                _STOP_TIMEOUT_SECONDS,
            )
        except Exception as exc:
            logger.warning("Could not mark this worker stopped in the registry: %r", exc)


def mark_dead(database: str, worker_id: str, how: str) -> None:
    """The supervisor saw a worker process die: its row reads dead at once, saying how."""
    try:
        execute(workers_sql.worker_stopped(worker_id, ending=how[:100]), database)
    except Exception as exc:  # it reads dead anyway once its heartbeat is older than the lease
        logger.warning("Could not mark worker %s dead in the registry: %s", worker_id, exc)
