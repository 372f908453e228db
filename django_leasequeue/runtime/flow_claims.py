"""The worker's flow claim: jobs held to concurrency caps or rate limits, claimed only as far
as their limits allow, in one transaction that holds the limits' locks (see ``flow_candidates``
in sql/flow.sql for why this is race-free)."""

import time
from collections.abc import Generator, Sequence
from typing import Any

import psycopg

from django_leasequeue.flow.admission import admit, limit_keys
from django_leasequeue.runtime.database import Database
from django_leasequeue.sql import flow as flow_sql
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import aexecute
from django_leasequeue.sql.records import ClaimedJob, FlowCandidates, FlowUsage
from django_leasequeue.sql.statement import Statement

# Most partitions, and most jobs of one partition, a round looks at.
_MAX_PARTITIONS = 20
_MAX_PER_PARTITION = 10
# How long a second look waits for the claimer holding a limit's lock. Its transaction takes a
# few milliseconds; one that takes longer is stuck, and the next poll looks again. A quarter of
# the lease at most: well under the connection's statement_timeout (half the lease).
_HOLDER_WAIT_MS = 1000


# The statements of a flow claim, one at a time: each is sent in, its result sent back.
Steps = Generator[Statement[Any], Any, list[ClaimedJob]]


class FlowRounds:
    """A flow claim's rounds as the statements they run, with no I/O of their own (the worker
    runs them on its connection, in a transaction; the testing drain on Django's, at its
    clock): round-robin over flow partitions, so that one busy key cannot starve the others,
    and when a job held back by a rate limit may start (``wake_at``)."""

    def __init__(
        self, queues: Sequence[str] | None, *, worker_id: str, lease_seconds: float
    ) -> None:
        self.queues = queues
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        # The partition the last round stopped at: the next round starts after it.
        self._after = ""
        # Monotonic time at which a rate-held job may start; None when none waits on a rate.
        self.wake_at: float | None = None
        # The limits whose locks another claimer held during this claim (their jobs skipped).
        self._contended: set[str] = set()

    def claim_steps(self, free: int) -> Steps:
        """A round from where the last one stopped; when it reaches the last partition without
        claiming anything, a second round from the first partition."""
        self.wake_at = None
        self._contended = set()
        started_after = self._after
        claimed = yield from self._round(free)
        if claimed or not started_after:
            return claimed
        return (yield from self._round(free))

    def _round(self, free: int) -> Steps:
        partitions = min(2 * free, _MAX_PARTITIONS)
        candidates: FlowCandidates = yield flow_sql.flow_candidates(
            self.queues,
            after=self._after,
            partitions=partitions,
            per_partition=min(free, _MAX_PER_PARTITION),
        )
        reached_end = len({job.flow_key for job in candidates.jobs}) < partitions
        if reached_end:
            self._after = ""
        elif candidates.jobs:
            self._after = candidates.jobs[-1].flow_key
        if not candidates.jobs:
            return []
        locked = candidates.locked_keys
        self._contended |= {
            limit["key"] for job in candidates.jobs for limit in job.limits
        } - locked
        concurrency_keys, queues, rate_keys = limit_keys(
            limit for job in candidates.jobs for limit in job.limits if limit["key"] in locked
        )
        usage: FlowUsage = yield flow_sql.flow_usage(
            concurrency_keys=concurrency_keys, queues=queues, rate_keys=rate_keys
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
            yield flow_sql.store_rate_buckets(admission.tats)
        return (
            yield jobs_sql.claim_by_ids(
                admission.ids,
                worker_id=self.worker_id,
                lease_seconds=self.lease_seconds,
                flow_claim=True,
            )
        )


class FlowClaimer(FlowRounds):
    """The worker's flow claim: its rounds in one transaction on the worker's connection."""

    def __init__(
        self, db: Database, queues: Sequence[str] | None, *, worker_id: str, lease_seconds: float
    ) -> None:
        super().__init__(queues, worker_id=worker_id, lease_seconds=lease_seconds)
        self.db = db

    async def claim(self, free: int) -> list[ClaimedJob]:
        """Claim up to ``free`` jobs held to limits. When another claimer held some limits'
        locks, and room is left, look again once its transaction is over: it may have read their
        usage before a slot came free, and then nobody would take that slot until the next
        poll."""
        started_after = self._after
        claimed = await self.db.transaction(lambda conn: self._claim(conn, free), "flow claim")
        contended = self._contended
        if not contended or len(claimed) >= free:
            return claimed
        left_off, self._after = self._after, started_after
        try:
            return claimed + await self.db.transaction(
                lambda conn: self._claim_after_holder(conn, contended, free - len(claimed)),
                "flow claim after a lock holder",
            )
        except psycopg.errors.LockNotAvailable:
            self._after = left_off
            return claimed

    async def _claim_after_holder(
        self, conn: psycopg.AsyncConnection, contended: set[str], free: int
    ) -> list[ClaimedJob]:
        wait_ms = min(_HOLDER_WAIT_MS, int(self.lease_seconds * 250))
        await aexecute(flow_sql.limit_lock_wait(milliseconds=wait_ms), conn)
        await aexecute(flow_sql.wait_for_flow_locks(contended), conn)
        return await self._claim(conn, free)

    async def _claim(self, conn: psycopg.AsyncConnection, free: int) -> list[ClaimedJob]:
        steps = self.claim_steps(free)
        try:
            statement = next(steps)
            while True:
                statement = steps.send(await aexecute(statement, conn))
        except StopIteration as done:
            return done.value
