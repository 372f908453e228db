"""The worker's limited claim: jobs held to concurrency caps or rate limits, claimed only as far
as their limits allow, in one transaction that holds the limits' locks (see ``flow_candidates``
in sql/flow.sql for why this is race-free)."""

import time
from collections.abc import Sequence

import psycopg

from django_leasequeue import protocol
from django_leasequeue.flow.admission import admit, limit_keys
from django_leasequeue.protocol import ClaimedJob
from django_leasequeue.runtime.database import Database

# Most partitions, and most jobs of one partition, a round looks at.
_MAX_PARTITIONS = 20
_MAX_PER_PARTITION = 10


class FlowClaimer:
    """Claims limited jobs round-robin over flow partitions (one busy key cannot starve the
    others), and knows when a job held back by a rate limit may start (``wake_at``)."""

    def __init__(
        self, db: Database, queues: Sequence[str] | None, *, worker_id: str, lease_seconds: float
    ) -> None:
        self.db = db
        self.queues = queues
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        # The partition the last round stopped at: the next round starts after it.
        self._after = ""
        # Monotonic time at which a rate-held job may start; None when none waits on a rate.
        self.wake_at: float | None = None

    async def claim(self, free: int) -> list[ClaimedJob]:
        return await self.db.transaction(lambda conn: self._claim(conn, free), "flow claim")

    async def _claim(self, conn: psycopg.AsyncConnection, free: int) -> list[ClaimedJob]:
        """A round from where the last one stopped; when it reaches the last partition without
        claiming anything, a second round from the first partition."""
        self.wake_at = None
        started_after = self._after
        claimed = await self._round(conn, free)
        if claimed or not started_after:
            return claimed
        return await self._round(conn, free)

    async def _round(self, conn: psycopg.AsyncConnection, free: int) -> list[ClaimedJob]:
        partitions = min(2 * free, _MAX_PARTITIONS)
        candidates = await protocol.aexecute(
            protocol.flow_candidates(
                self.queues,
                after=self._after,
                partitions=partitions,
                per_partition=min(free, _MAX_PER_PARTITION),
            ),
            conn,
        )
        reached_end = len({job.flow_key for job in candidates.jobs}) < partitions
        if reached_end:
            self._after = ""
        elif candidates.jobs:
            self._after = candidates.jobs[-1].flow_key
        if not candidates.jobs:
            return []
        locked = candidates.locked_keys
        concurrency_keys, queues, rate_keys = limit_keys(
            limit for job in candidates.jobs for limit in job.limits if limit["key"] in locked
        )
        usage = await protocol.aexecute(
            protocol.flow_usage(
                concurrency_keys=concurrency_keys, queues=queues, rate_keys=rate_keys
            ),
            conn,
        )
        admission = admit(candidates.jobs, locked, usage, free)
        if admission.next_start is not None:
            # A next start comes from a rate limit, whose usage row carries the database's now.
            wake_at = time.monotonic() + (admission.next_start - usage.now).total_seconds()  # type: ignore[operator]
            self.wake_at = wake_at if self.wake_at is None else min(self.wake_at, wake_at)
        if admission.last_partition is not None and not reached_end:
            self._after = admission.last_partition
        if not admission.ids:
            return []
        if admission.tats:
            await protocol.aexecute(protocol.store_rate_buckets(admission.tats), conn)
        return await protocol.aexecute(
            protocol.claim_by_ids(
                admission.ids,
                worker_id=self.worker_id,
                lease_seconds=self.lease_seconds,
                limited=True,
            ),
            conn,
        )
