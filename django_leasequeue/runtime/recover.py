"""The recover sweep: expired leases go back to retrying (or failed, once their attempts are
used up), jobs past their expiry end failed (``JobExpired``), and workers are woken again for
due jobs nobody claimed for a while. Every worker process runs it at start and every
``sweep_seconds``; concurrent sweeps are harmless (each row is moved by one conditional
statement)."""

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django_leasequeue import protocol
from django_leasequeue.conf import BackendConfig
from django_leasequeue.control.statements import ExpiredJob, expire_doomed, expire_jobs, open_queues
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.runtime.database import Database
from django_leasequeue.wakeups import Wakeups

logger = logging.getLogger(__name__)


class RecoverSweep:
    """Sweeps in bounded batches on the heartbeat's connection; re-signals stale due jobs only
    while ``wakeups_usable()`` (Redis on and reachable)."""

    def __init__(
        self,
        db: Database,
        backend_config: BackendConfig,
        wakeups: Wakeups,
        redis_calls: ThreadPoolExecutor,
        wakeups_usable: Callable[[], bool],
    ) -> None:
        self.db = db
        self.backend_config = backend_config
        self.wakeups = wakeups
        self.redis_calls = redis_calls
        self.wakeups_usable = wakeups_usable

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.backend_config.sweep_seconds)
            try:
                await self.sweep_once()
            except Exception:
                logger.exception("Recover sweep failed; trying again next interval.")

    async def sweep_once(self) -> None:
        """Recover expired leases and expire jobs past their expiry (in bounded batches), and
        wake workers for forgotten due jobs."""
        batch = self.backend_config.sweep_batch
        while True:
            swept = await self.db.run(
                protocol.recover_expired(
                    limit=batch, backoff_cap_seconds=self.backend_config.backoff_cap_seconds
                )
            )
            for job in swept:
                logger.warning("Job %s: lease expired, now %s.", job.id, job.status)
                metrics.recovered(job.queue_name, job.task_path, job.status)
            # A retry set past the job's expiry would never start: it expires now.
            retrying = [job.id for job in swept if job.status == "retrying"]
            if retrying:
                self._expired(await self.db.run(expire_doomed(retrying)))
            if len(swept) < batch:
                break
        while len(expired := await self.db.run(expire_jobs(limit=batch))) == batch:
            self._expired(expired)
        self._expired(expired)
        if self.wakeups_usable():
            stale = await self.db.run(await self._stale_due(batch))
            if stale:
                pairs = [(row["queue_name"], str(row["id"])) for row in stale]
                await asyncio.get_running_loop().run_in_executor(
                    self.redis_calls, self.wakeups.push_where_idle, pairs
                )

    async def _stale_due(self, batch: int) -> protocol.Statement[list[protocol.Row]]:
        """Stale due jobs to wake workers for; while a queue is paused, from the open queues'
        heads only (a paused queue's backlog is neither walked nor woken)."""
        older_than = self.backend_config.resignal_after_seconds
        open_now = (await self.db.run(open_queues(None))).open
        if open_now is None:
            return protocol.stale_due_jobs(older_than_seconds=older_than, limit=batch)
        return protocol.stale_due_jobs_by_queue(
            open_now, older_than_seconds=older_than, limit=batch
        )

    @staticmethod
    def _expired(jobs: list[ExpiredJob]) -> None:
        if jobs:
            logger.warning(
                "%d job(s) expired before they started (%s).",
                len(jobs),
                ", ".join(sorted({job.task_path for job in jobs})),
            )
        for job in jobs:
            metrics.expired(job.queue_name, job.task_path)
