"""The recover sweep: expired leases go back to retrying (or failed, once their attempts are
used up), jobs past their expiry end failed (``JobExpired``), and workers are woken again for
due jobs nobody claimed for a while. Every worker process recovers leases before its first
claim, then sweeps at once and every ``sweep_seconds``; concurrent sweeps are harmless (each row
is moved by one conditional statement)."""

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django_leasequeue.conf import BackendConfig
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.queue_summary import declared_queues
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.history_rollup import HistoryRollup
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.queue_control import ExpiredJob, expire_doomed, expire_jobs, open_queues
from django_leasequeue.sql.statement import Row, Statement
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
        # Whether a job with an expiry waited at the last sweep: the claimer's polls then use
        # the claim that reads them too (claim_batch_with_expiring).
        self.expiring_waiting = False
        # The queues' history for the admin's dashboard, rolled up on this connection.
        self.history = HistoryRollup(db, declared_queues())

    async def run(self) -> None:
        """Sweep now (the expiry of a backlog left by an outage starts at once, beside the
        claims), then every ``sweep_seconds``; each sweep then rolls up the queues' history."""
        while True:
            try:
                await self.sweep_once()
            except Exception:
                logger.exception("Recover sweep failed; trying again next interval.")
            try:
                await self.history.roll_up()
            except Exception:
                logger.exception("Queue history rollup failed; trying again next interval.")
            await asyncio.sleep(self.backend_config.sweep_seconds)

    async def sweep_once(self) -> None:
        """Recover expired leases and expire jobs past their expiry (in bounded batches), and
        wake workers for forgotten due jobs."""
        await self.recover_leases()
        await self.look_for_expiring_jobs()
        await self._expire_waiting()
        if self.wakeups_usable():
            stale = await self.db.run(await self._stale_due(self.backend_config.sweep_batch))
            if stale:
                pairs = [(row["queue_name"], str(row["id"])) for row in stale]
                await asyncio.get_running_loop().run_in_executor(
                    self.redis_calls, self.wakeups.push_where_idle, pairs
                )

    async def before_first_claim(self) -> None:
        """Recover expired leases, and see whether jobs with an expiry wait. The expiry of
        waiting jobs, which after a long outage may be a million rows, is left to ``run``,
        beside the claims (which never pick an expired job)."""
        await self.recover_leases()
        await self.look_for_expiring_jobs()

    async def look_for_expiring_jobs(self) -> None:
        self.expiring_waiting = await self.db.run(jobs_sql.expiring_jobs_waiting())

    async def recover_leases(self) -> None:
        """Expired leases go back to retrying (or failed), in bounded batches."""
        batch = self.backend_config.sweep_batch
        while True:
            swept = await self.db.run(
                jobs_sql.recover_expired(
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

    async def _expire_waiting(self) -> None:
        """Waiting jobs past their expiry end failed, in bounded batches, with one log line for
        the whole sweep (a backlog after an outage may be a million jobs)."""
        batch = self.backend_config.sweep_batch
        tasks: Counter[str] = Counter()
        while True:
            expired = await self.db.run(expire_jobs(limit=batch))
            for job in expired:
                metrics.expired(job.queue_name, job.task_path)
                tasks[job.task_path] += 1
            if len(expired) < batch:
                break
        if tasks:
            logger.warning(
                "%d job(s) expired before they started (%s).",
                tasks.total(),
                ", ".join(sorted(tasks)),
            )

    async def _stale_due(self, batch: int) -> Statement[list[Row]]:
        """Stale due jobs to wake workers for; while a queue is paused, from the open queues'
        heads only (a paused queue's backlog is neither walked nor woken)."""
        older_than = self.backend_config.resignal_after_seconds
        open_now = (await self.db.run(open_queues(None))).open
        if open_now is None:
            return jobs_sql.stale_due_jobs(older_than_seconds=older_than, limit=batch)
        return jobs_sql.stale_due_jobs_by_queue(
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
