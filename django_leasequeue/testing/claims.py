"""A drain's claims and sweep: the worker's statements, at the clock of the drain's round, on
Django's connection for the job database.

Each round claims, as a worker does, the jobs held to limits first (the worker's flow claim,
``runtime.flow_claims.FlowRounds``, its statements run here, in a transaction of their own or a
savepoint of the test's), then due unlimited jobs in claim order (``claim_batch_with_expiring``,
which skips paused queues and expired jobs). Before claiming, the expiry sweep fails jobs past
their expiry with ``JobExpired``, as a worker's sweep does.
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction

from django_leasequeue.runtime.flow_claims import FlowRounds
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.clock import ANY_TIME, at_clock
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.queue_control import expire_jobs
from django_leasequeue.sql.records import ClaimedJob
from django_leasequeue.sql.statement import Statement

# Jobs past their expiry failed per statement of the sweep (it goes on while it fills one).
_EXPIRE_BATCH = 1000


class DrainClaims:
    """Claims for one drain: of ``queues`` (None: every queue), under the lease of
    ``worker_id``; a job is due when its ``run_after`` has come by the clock each call is
    given, or (``with_scheduled``) whatever it is."""

    def __init__(
        self,
        *,
        database: str,
        queues: Sequence[str] | None,
        with_scheduled: bool,
        worker_id: str,
        lease_seconds: float,
    ) -> None:
        self.database = database
        self.queues = None if queues is None else list(queues)
        self.with_scheduled = with_scheduled
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self._flow = FlowRounds(self.queues, worker_id=worker_id, lease_seconds=lease_seconds)

    def expire(self, clock: datetime) -> int:
        """Fail the waiting jobs past their expiry at ``clock`` (``JobExpired``); how many."""
        count = 0
        while True:
            expired = self._run(expire_jobs(limit=_EXPIRE_BATCH), clock)
            count += len(expired)
            if len(expired) < _EXPIRE_BATCH:
                return count

    def claim(self, limit: int, clock: datetime) -> list[ClaimedJob]:
        """Up to ``limit`` jobs due at ``clock``: those held to limits that their limits let
        start, then unlimited ones."""
        claimed = self._flow_claim(limit, clock) if limit > 0 else []
        free = limit - len(claimed)
        if free > 0:
            claim = jobs_sql.claim_batch(
                self.queues,
                free,
                worker_id=self.worker_id,
                lease_seconds=self.lease_seconds,
                with_expiring=True,
            )
            claimed += self._run(claim, clock)
        return claimed

    def _flow_claim(self, free: int, clock: datetime) -> list[ClaimedJob]:
        # Its locks are the transaction's: held through the claim, as in a worker.
        with transaction.atomic(using=self.database):
            steps = self._flow.claim_steps(free)
            try:
                statement = next(steps)
                while True:
                    statement = steps.send(self._run(statement, clock))
            except StopIteration as done:
                return done.value

    def _run(self, statement: Statement[Any], clock: datetime) -> Any:
        due_by = ANY_TIME if self.with_scheduled else clock
        return execute(at_clock(statement, clock, due_by), self.database)
