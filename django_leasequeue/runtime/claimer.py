"""The claimer: keeps up to ``--concurrency`` jobs in flight in one worker process.

Each round it claims, in this order: jobs held to limits (the flow claim, when one may be due),
the oldest due job ahead of priority order (fairness under a backlog), the job ids popped from
the Redis wakeup lists (a compare-and-swap claim), else a poll of PostgreSQL (``SKIP LOCKED``).
A burst ends when nothing is due and says what it leaves to other workers.
"""

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import psycopg
from redis.exceptions import RedisError

from django_leasequeue.conf import BackendConfig
from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.fairness import OldestDueBound
from django_leasequeue.runtime.flow_claims import FlowClaimer
from django_leasequeue.runtime.open_queues import OpenQueues
from django_leasequeue.runtime.poll_bound import PollBound
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.records import ClaimedJob
from django_leasequeue.sql.statement import Statement
from django_leasequeue.wakeups import Wakeups

logger = logging.getLogger(__name__)

# After Redis fails, the claimer polls PostgreSQL and tries Redis again after this long.
_REDIS_RETRY_SECONDS = 2.0
# Longest pause after claims PostgreSQL refused (each refusal in a row adds a poll interval).
_CLAIM_RETRY_MAX_SECONDS = 10.0

# Starts the runners of claimed jobs: (jobs, monotonic time the claim was sent, flow-claimed).
StartJobs = Callable[[list[ClaimedJob], float, bool], None]


class Popped(NamedTuple):
    ids: list[uuid.UUID]
    count: int  # type: ignore[assignment]  # items popped, garbage included (hides tuple.count)


class DroppedWakeups:
    """Counts wakeups that are not job ids; logs one warning per interval, not one per item
    (a flood of garbage must not flood the log)."""

    INTERVAL_SECONDS = 10.0

    def __init__(self) -> None:
        self._count = 0
        self._sample: bytes = b""
        self._logged_at = -self.INTERVAL_SECONDS

    def drop(self, item: object) -> None:
        self._count += 1
        self._sample = item[:100] if isinstance(item, bytes) else repr(item)[:100].encode()
        now = time.monotonic()
        if now - self._logged_at >= self.INTERVAL_SECONDS:
            logger.warning(
                "Dropped %d wakeup(s) that are not job ids (latest: %r).",
                self._count,
                self._sample,
            )
            self._count, self._logged_at = 0, now


class ForeignWakeups:
    """Notices wakeups for jobs that this worker's database does not have: the sign of two
    projects (or backends) sharing one Redis database and key prefix, whose workers then take
    each other's wakeups. Nothing is lost (the other project's workers find those jobs by
    polling) but pickups wait for a poll, and nothing else would say why.

    Only woken ids the claim did not take are noted (a job already claimed or finished is woken
    again harmlessly, by design; so is one held to limits), and they are looked up together at
    most once per ``CHECK_SECONDS``: one primary-key read at most, never on the path of a claim
    that took every id. Warns at once, then at most once per ``WARN_SECONDS`` with what it saw
    meanwhile. The ids are not pushed back: this worker would pop them again, and the other
    project's workers poll for them anyway."""

    CHECK_SECONDS = 1.0
    WARN_SECONDS = 300.0
    # Ids noted between two lookups beyond this many are not looked up (the latest are).
    MAX_NOTED = 1000

    def __init__(self, db: Database, backend_config: BackendConfig) -> None:
        self.db = db
        self.backend_config = backend_config
        self.noted: deque[uuid.UUID] = deque(maxlen=self.MAX_NOTED)
        self._checked_at = -self.CHECK_SECONDS
        self._warned_at: float | None = None
        self._count = 0

    async def check(self) -> None:
        """When due, look the noted ids up; count (and, when due, report) those without a row."""
        now = time.monotonic()
        if not self.noted or now - self._checked_at < self.CHECK_SECONDS:
            return
        self._checked_at = now
        unclaimed = list(self.noted)
        self.noted.clear()
        present = await self.db.run(jobs_sql.jobs_present(unclaimed))
        foreign = [job_id for job_id in unclaimed if job_id not in present]
        if not foreign:
            return
        self._count += len(foreign)
        if self._warned_at is not None and now - self._warned_at < self.WARN_SECONDS:
            return
        config = self.backend_config
        logger.warning(
            "Popped wakeups for %d job(s) that database %r does not have (latest: %s): another "
            "project or backend probably uses this Redis database (cache alias %r) with the "
            "same key prefix %r. Its workers and these take each other's wakeups, so jobs on both "
            "sides wait for a poll (up to poll_seconds) instead of starting at once. Give each "
            "backend its own TASKS[...]['OPTIONS']['key_prefix'] (or Redis database). (A job "
            "deleted before it ran also leaves a wakeup like this; this is said at most every "
            "%d minutes.)",
            self._count,
            config.database,
            foreign[-1],
            config.redis_alias,
            config.key_prefix,
            self.WARN_SECONDS // 60,
        )
        self._count, self._warned_at = 0, now


def job_ids(raw: Sequence[object], garbage: DroppedWakeups) -> Popped:
    """The job ids among popped wakeups; anything else is counted as garbage and dropped."""
    ids = []
    for item in raw:
        try:
            ids.append(uuid.UUID(item.decode()))  # type: ignore[attr-defined]
        except (ValueError, UnicodeDecodeError, AttributeError):
            garbage.drop(item)
    return Popped(ids, len(raw))


class Claimer:
    """Claims jobs for free slots and hands them to ``start_jobs``; ``slot_freed`` is called
    when a job ends. ``in_flight`` counts the jobs running now, ``fenced`` says whether the
    heartbeat could not confirm renewals (then nothing is claimed), ``expiring_waiting`` whether
    the sweep saw a job with an expiry waiting (then polls read those too)."""

    def __init__(
        self,
        *,
        db: Database,
        backend_config: BackendConfig,
        config: WorkerConfig,
        wakeups: Wakeups,
        wakeup_queues: list[str],
        use_wakeups: bool,
        worker_id: str,
        redis_thread: ThreadPoolExecutor,
        stopping: asyncio.Event,
        in_flight: Callable[[], int],
        fenced: Callable[[], bool],
        expiring_waiting: Callable[[], bool],
        start_jobs: StartJobs,
    ) -> None:
        self.db = db
        self.backend_config = backend_config
        self.config = config
        self.queues = None if config.queues is None else list(config.queues)
        self.wakeups = wakeups
        self.wakeup_queues = wakeup_queues
        self.use_wakeups = use_wakeups
        self.worker_id = worker_id
        self.redis_thread = redis_thread
        self.stopping = stopping
        self._in_flight = in_flight
        self._fenced = fenced
        self._expiring_waiting = expiring_waiting
        self._start_jobs = start_jobs
        # While a queue is paused, polls read the heads of the open queues instead.
        self.open_queues = OpenQueues(db, self.queues, interval=backend_config.poll_seconds)
        # Jobs held to limits are claimed apart, under their limits' locks.
        self.flow = FlowClaimer(
            db, self.queues, worker_id=worker_id, lease_seconds=backend_config.lease_seconds
        )
        # Whether jobs held to limits may be claimable: set at start, on every poll, when a
        # wakeup names a job the plain claim did not take, and when such a job here ends.
        self._flow_due = True
        # When this worker last claimed the oldest due job ahead of priority order (fairness).
        self._oldest_claimed_at = time.monotonic()
        # Where its next probe starts (runtime/fairness.py), and its next poll
        # (runtime/poll_bound.py).
        self._oldest_bound = OldestDueBound()
        self._poll_bound = PollBound()
        self._slot_freed = asyncio.Event()
        self.redis_down = False
        self._redis_retry_at = 0.0
        self._garbage = DroppedWakeups()
        self._foreign = ForeignWakeups(db, backend_config)
        # While claims come back full (a backlog), claim again only once this many slots are
        # free, so that each round trip serves several jobs; an idle worker claims at once.
        self._backlog_batch = max(1, config.concurrency // 2)
        # Whether the last claim came back full, and when PostgreSQL was last polled.
        self._backlog = False
        self._last_poll = 0.0

    def slot_freed(self, *, flow_limited: bool) -> None:
        """A job ended; if it was held to limits, another such job may start now."""
        self._flow_due |= flow_limited
        self._slot_freed.set()

    def wake(self) -> None:
        """Stop waiting for a free slot (the worker is stopping)."""
        self._slot_freed.set()

    async def run(self) -> None:
        """Claim rounds until stopped (or, in a burst, until nothing is due). A claim that
        PostgreSQL refuses (any error but a lost connection, which ``Database`` handles) costs
        one round: it is logged and tried again after a pause, the worker stays up."""
        refused = 0
        while not self.stopping.is_set():
            try:
                if await self._round():
                    return
            except psycopg.Error as exc:
                refused += 1
                pause = min(self.backend_config.poll_seconds * refused, _CLAIM_RETRY_MAX_SECONDS)
                logger.error(
                    "A claim failed (%s: %s); claiming again in %.1fs.",
                    type(exc).__name__,
                    str(exc).strip(),
                    pause,
                )
                # Ids popped for the failed claim are gone from Redis: poll for them next.
                self._last_poll = 0.0
                self._flow_due = True
                await self._sleep_unless_stopping(pause)
            else:
                refused = 0

    async def _round(self) -> bool:
        """One claim round; True when a burst has nothing left to do."""
        free = self.config.concurrency - self._in_flight()
        if free <= 0 or (self._backlog and free < self._backlog_batch):
            self._slot_freed.clear()
            await self._slot_freed.wait()
            return False
        claimed: list[ClaimedJob] = []
        woken = False
        if self._fenced():  # PostgreSQL did not answer in time: claim nothing until it does
            await self._sleep_unless_stopping(self.backend_config.poll_seconds)
            return False
        sent_at = time.monotonic()
        if self._flow_claim_due(sent_at):
            self._flow_due = False
            claimed = await self.flow.claim(free)
            if claimed:
                self._start_jobs(claimed, sent_at, True)
                return False
        if self._backlog and self._oldest_first_due(sent_at):
            claimed = await self._claim_oldest()
        # A job held back by a rate limit may start before a wait on Redis would end: Redis
        # times a blocked pop out up to 100 ms late, so take what is there and wait here.
        rate_soon = self._wait_seconds() < self.backend_config.poll_seconds
        if not claimed and self.use_wakeups and time.monotonic() >= self._redis_retry_at:
            # While claims come back full, a backlog waits in PostgreSQL: poll at once when no
            # wakeup is there (a resumed queue, wakeups lost with Redis) instead of waiting.
            no_wait = rate_soon or self._backlog
            popped = await self._pop_wakeups(free, 0 if no_wait else self._wait_seconds())
            # Garbage popped counts as woken: no poll (and no claim) for it.
            woken = popped is not None and popped.count > 0
            if popped is not None and popped.ids:
                claimed = await self.db.run(self._claim_by_ids(popped.ids))
                if len(claimed) < len(popped.ids):
                    # A woken job not claimed may be one held to limits (or already taken, or
                    # another project's: asked once the claimed jobs have started).
                    self._flow_due = True
                    taken = {job.id for job in claimed}
                    self._foreign.noted.extend(i for i in popped.ids if i not in taken)
        poll_due = time.monotonic() - self._last_poll >= self.backend_config.poll_seconds
        if not claimed and (not woken or poll_due):
            self._last_poll = time.monotonic()
            self._flow_due = True
            claimed = await self._poll(free)
            if len(claimed) == free:
                self._flow_due = False  # a full claim: no slot left for limited jobs
        self._backlog = len(claimed) >= free
        if claimed:
            self._start_jobs(claimed, sent_at, False)
        if self._foreign.noted:
            await self._foreign.check()
        if claimed or woken:
            return False
        if self.config.burst:
            if not self._in_flight() and self.flow.wake_at is None:
                await self._say_what_burst_leaves()
                return True
            self._slot_freed.clear()
            await self._wait_for_slot_or_rate()
        elif not self.use_wakeups or self.redis_down or rate_soon:
            await self._sleep_unless_stopping(self._wait_seconds())
        return False

    def _flow_claim_due(self, now: float) -> bool:
        wake_at = self.flow.wake_at
        return self._flow_due or (wake_at is not None and now >= wake_at)

    def _wait_seconds(self) -> float:
        """How long an idle claimer may wait: a poll interval, or less when a job held back by a
        rate limit may start sooner (nothing wakes the worker then but its own clock)."""
        wait = self.backend_config.poll_seconds
        if self.flow.wake_at is not None:
            wait = min(wait, max(0.001, self.flow.wake_at - time.monotonic()))
        return wait

    async def _wait_for_slot_or_rate(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._slot_freed.wait(), self._wait_seconds())

    def _oldest_first_due(self, now: float) -> bool:
        """While claims come back full (a backlog), every ``oldest_first_seconds`` the oldest due
        job goes first, whatever its priority: no job starves under a stream of higher ones."""
        return now - self._oldest_claimed_at >= self.backend_config.oldest_first_seconds

    async def _poll(self, free: int) -> list[ClaimedJob]:
        """Claim up to ``free`` due jobs by the claim index. A poll that starts after the last
        full one's position and comes back short is completed from the head, so that a short
        poll always means nothing more is due (a burst then ends)."""
        lease_seconds = self.backend_config.lease_seconds
        open_queues = await self.open_queues.current()
        if open_queues is not None:
            return await self.db.run(
                jobs_sql.claim_batch_by_queue(
                    open_queues, free, worker_id=self.worker_id, lease_seconds=lease_seconds
                )
            )
        with_expiring = self._expiring_waiting()
        bounded = jobs_sql.claim_batch_starts_after(self.queues, with_expiring=with_expiring)
        after = self._poll_bound.current(time.monotonic()) if bounded else None
        claim = partial(
            jobs_sql.claim_batch,
            self.queues,
            worker_id=self.worker_id,
            lease_seconds=lease_seconds,
            with_expiring=with_expiring,
        )
        claimed = await self.db.run(claim(free, after=after))
        if after is not None and len(claimed) < free:
            claimed += await self.db.run(claim(free - len(claimed)))
        if bounded:
            self._poll_bound.claimed(claimed, free)
        return claimed

    async def _claim_oldest(self) -> list[ClaimedJob]:
        self._oldest_claimed_at = now = time.monotonic()
        open_queues = await self.open_queues.current()
        if open_queues is None:
            not_before = self._oldest_bound.current(now)
            oldest = await self.db.run(jobs_sql.oldest_due_job(self.queues, not_before=not_before))
            self._oldest_bound.found(oldest)
        else:
            oldest = await self.db.run(jobs_sql.oldest_due_job_by_queue(open_queues))
        return [] if oldest is None else await self.db.run(self._claim_by_ids([oldest.id]))

    async def _say_what_burst_leaves(self) -> None:
        """A burst ends when its queues have nothing due; say so, and name the due jobs it
        leaves in queues it does not serve (they wait for another worker)."""
        due = await self.db.run(reads_sql.due_by_queue())
        elsewhere = {
            queue: count
            for queue, count in due.items()
            if self.queues is not None and queue not in self.queues
        }
        if not elsewhere:
            logger.info("Burst: nothing due is left; exiting.")
            return
        logger.warning(
            "Burst: nothing due is left in %s; exiting. %d due job(s) wait in queues this worker "
            "does not serve: %s.",
            ", ".join(self.queues or []),
            sum(elsewhere.values()),
            ", ".join(f"{queue} ({count})" for queue, count in sorted(elsewhere.items())),
        )

    def _claim_by_ids(self, ids: list[uuid.UUID]) -> Statement[list[ClaimedJob]]:
        return jobs_sql.claim_by_ids(
            ids, worker_id=self.worker_id, lease_seconds=self.backend_config.lease_seconds
        )

    async def _pop_wakeups(self, count: int, timeout: float) -> Popped | None:
        """Ids popped from Redis within ``timeout`` (0: only those there now; garbage dropped);
        None when Redis is unreachable."""
        loop = asyncio.get_running_loop()
        try:
            raw = await loop.run_in_executor(
                self.redis_thread, self.wakeups.pop, self.wakeup_queues, count, timeout
            )
        except RedisError as exc:
            self.wakeups.outage.failed(f"no wakeups to wait on ({exc})")
            self.redis_down = True
            self._redis_retry_at = time.monotonic() + _REDIS_RETRY_SECONDS
            return None
        self.wakeups.outage.succeeded()
        self.redis_down = False
        return job_ids(raw, self._garbage)

    async def _sleep_unless_stopping(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)
