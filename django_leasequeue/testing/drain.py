"""``drain`` and ``adrain``: run the due jobs in the calling process, through the worker's claim,
run and completion code, on the caller's connection (inside a ``TestCase``'s transaction).

One clock for "now": inside a transaction PostgreSQL's ``now()`` is the transaction's start,
which in a ``TestCase`` may be long before, so the worker's statements run at the drain's clock
instead (``sql/clock.py``): the database's wall clock, read as each round of claims starts
(never behind the round before, nor behind this process's own clock: a job deferred to a moment
the test computed is due once that moment has passed). A job is due when its ``run_after`` is at
or before it, a retry's backoff and a snooze count from it, an expiry is judged by it. A job a
task enqueues for now is due in the next round (inside the test's transaction, its ``run_after``
is that transaction's start); a retry or a snooze comes due only once its wait has passed on the
wall clock, like a worker's, unless ``with_scheduled`` (due whatever its ``run_after``).
"""

import contextlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.db import DatabaseError
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from django_leasequeue.hooks import FinishOutcome
from django_leasequeue.runtime.worker_id import new_worker_id
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.clock import at_clock, drain_clock
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import ClaimedJob
from django_leasequeue.testing.attempts import Attempts, Ran
from django_leasequeue.testing.backends import testing_backend
from django_leasequeue.testing.claims import DrainClaims

# Jobs claimed per round: a worker's claims are as small; a round's flow claim and expiry sweep
# cost a few statements, shared by this many jobs.
_ROUND = 100
_FAILURES = {FinishOutcome.FAILED, FinishOutcome.RETRYING}


@dataclass(slots=True)
class DrainResult:
    """What a drain did, in attempts (``ran`` = ``succeeded`` + ``failed`` + ``snoozed`` +
    ``cancelled``, less any whose lease was lost): ``failed`` counts every attempt that
    ended in an error, ``retried`` those of them whose job will run again; ``expired``
    counts the jobs the drain found past their expiry (failed with ``JobExpired``, never
    run)."""

    ran: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    snoozed: int = 0
    cancelled: int = 0
    expired: int = 0

    def _count(self, ran: Ran) -> None:
        self.ran += 1
        outcome = ran.outcome
        if outcome == FinishOutcome.SUCCEEDED:
            self.succeeded += 1
        elif outcome in _FAILURES:
            self.failed += 1
            self.retried += outcome == FinishOutcome.RETRYING
        elif outcome == FinishOutcome.SNOOZED:
            self.snoozed += 1
        elif outcome == FinishOutcome.CANCELLED:
            self.cancelled += 1


def drain(
    queue: str | Iterable[str] | None = None,
    *,
    with_scheduled: bool = False,
    with_recursion: bool = True,
    with_safety: bool = True,
    limit: int | None = None,
) -> DrainResult:
    """Run the due jobs of ``queue`` (a name, several, or None: every queue) here and now, as a
    worker would, on the caller's database connection; returns what it did.

    ``with_scheduled``: also the jobs whose time has not come (deferred with ``run_after``, a
    retry waiting for its backoff, a snoozed job). ``with_recursion``: go on while the jobs run
    make more jobs due (a task that enqueues another, a workflow's next steps, a retry with
    ``with_scheduled``); False: only the jobs claimed when the drain starts, each attempted
    once. ``with_safety=False``: a task's exception, once its failure is recorded, is raised
    here (the jobs claimed beside it handed back first). ``limit``: at most this many attempts.
    Rate limits and concurrency caps hold: a job they hold back is not due yet.
    """
    backend = testing_backend()
    database = backend.config.database
    clock = DrainClock(database)
    claims = DrainClaims(
        database=database,
        queues=[queue] if isinstance(queue, str) else None if queue is None else list(queue),
        with_scheduled=with_scheduled,
        worker_id=new_worker_id("drain"),
        lease_seconds=backend.config.lease_seconds,
    )
    attempts = Attempts(backend)
    done = DrainResult()
    left = float("inf") if limit is None else limit
    claimed: deque[ClaimedJob] = deque()
    try:
        if not with_recursion:  # the snapshot: every job claimable now, claimed before any runs
            round_clock = clock.read()
            done.expired += claims.expire(round_clock)
            while left - len(claimed) > 0 and (
                more := claims.claim(_round(left - len(claimed)), round_clock)
            ):
                claimed.extend(more)
        while left > 0:
            if not claimed and with_recursion:
                round_clock = clock.read()
                done.expired += claims.expire(round_clock)
                claimed.extend(claims.claim(_round(left), round_clock))
            if not claimed:
                return done
            ran = attempts.run(claimed.popleft(), round_clock)
            left -= 1
            done._count(ran)
            if not with_safety and ran.exception is not None and ran.outcome in _FAILURES:
                raise ran.exception
        return done
    except BaseException:
        # The jobs claimed beside the one that raised: back for the next drain or a worker
        # (unless the connection cannot take a statement any more: their leases then end).
        with contextlib.suppress(DatabaseError, TransactionManagementError):
            for other in claimed:
                execute(at_clock(jobs_sql.hand_back(other.lease), round_clock), database)
        raise


async def adrain(
    queue: str | Iterable[str] | None = None,
    *,
    with_scheduled: bool = False,
    with_recursion: bool = True,
    with_safety: bool = True,
    limit: int | None = None,
) -> DrainResult:
    """``drain`` for async code: it runs in the thread that owns the caller's database
    connection (the test's, under Django's test runner), as Django's async ORM calls do."""
    return await sync_to_async(drain, thread_sensitive=True)(
        queue,
        with_scheduled=with_scheduled,
        with_recursion=with_recursion,
        with_safety=with_safety,
        limit=limit,
    )


def _round(left: float) -> int:
    return int(min(_ROUND, left))


class DrainClock:
    """The drain's clock: the database's wall clock, never behind this process's nor the last
    reading."""

    def __init__(self, database: str) -> None:
        self._database = database
        self._last = datetime.min.replace(tzinfo=UTC)

    def read(self) -> datetime:
        now = max(execute(drain_clock(), self._database), timezone.now(), self._last)
        self._last = now
        return now
