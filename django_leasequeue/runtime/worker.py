"""One worker process's event loop: claimer, heartbeat, recover sweep and completion writer."""

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import psycopg
from redis.exceptions import RedisError

from django_leasequeue import protocol
from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.exceptions import UnstorableValue
from django_leasequeue.jsonargs import escaped_text
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.progress.events import apublish
from django_leasequeue.protocol import ClaimedJob
from django_leasequeue.results import build_result, task_variant
from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.runtime.completions import CompletionBatcher
from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.context import JobContext
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.execution import Outcome, error_of, execute, resolve
from django_leasequeue.runtime.flow_claims import FlowClaimer
from django_leasequeue.runtime.handle import JobHandle, StopReason
from django_leasequeue.runtime.registry import WorkerRegistry
from django_leasequeue.runtime.scheduler import Scheduler
from django_leasequeue.runtime.shutdown import (
    StopClock,
    close_within,
    end_claiming,
    end_runners,
    stop_services,
    unless_stopped,
)
from django_leasequeue.runtime.task_signals import TaskSignalDispatcher, wanted
from django_leasequeue.runtime.threads import JobThreads
from django_leasequeue.runtime.worker_id import new_worker_id
from django_leasequeue.status import JobStatus
from django_leasequeue.tasks_framework import (
    Task,
    TaskResult,
    TaskResultStatus,
    task_finished,
    task_started,
)

logger = logging.getLogger(__name__)

# After Redis fails, the claimer polls PostgreSQL and tries Redis again after this long.
_REDIS_RETRY_SECONDS = 2.0
# Longest pause after claims PostgreSQL refused (each refusal in a row adds a poll interval).
_CLAIM_RETRY_MAX_SECONDS = 10.0
# How often the worker asks Redis which of its running jobs a browser page follows live.
_WATCH_REFRESH_SECONDS = 1.0


class _Popped(NamedTuple):
    ids: list[uuid.UUID]
    count: int  # type: ignore[assignment]  # items popped, garbage included (hides tuple.count)


class _DroppedWakeups:
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


def fence_margin(lease_seconds: float) -> float:
    """How long before the server's lease ends a worker stops a job whose renewal it could not
    confirm. Deadlines count from the moment a claim or renewal was *sent*, so the round trip
    is already inside them; the margin covers the two clocks running at slightly different
    rates (far below 1% between machines) and the time a job takes to stop once told: a tenth
    of the lease, at least 0.2 s."""
    return max(0.2, 0.1 * lease_seconds)


class Worker:
    def __init__(
        self, backend: LeaseQueueBackend, config: WorkerConfig, worker_id: str | None = None
    ) -> None:
        self.backend = backend
        self.backend_config = backend.config
        self.config = config
        self.worker_id = worker_id or new_worker_id()
        self.queues = None if config.queues is None else list(config.queues)
        # Redis lists to wait on: the named queues, or every queue the backend declares.
        self.wakeup_queues = self.queues or sorted(backend.queues)
        self.use_wakeups = backend.wakeups.enabled and bool(self.wakeup_queues) and not config.burst
        self.db = Database(
            self.backend_config.database,
            prepared_statements=self.backend_config.prepared_statements,
            name="work",
            lease_seconds=self.backend_config.lease_seconds,
        )
        # Heartbeats and sweeps get their own connection so claims never delay them.
        self.beat_db = Database(
            self.backend_config.database,
            prepared_statements=self.backend_config.prepared_statements,
            name="heartbeat",
            lease_seconds=self.backend_config.lease_seconds,
        )
        # A job's lease, as this worker knows it: the send time of the claim or of the last
        # confirmed renewal, plus the lease, less this margin (see ``fence_margin``).
        self.fence_margin = fence_margin(self.backend_config.lease_seconds)
        # Set while the worker could not confirm a renewal in time: it claims nothing.
        self.fenced = False
        # Set when a service task died: the process exits non-zero, to be restarted.
        self.failed = False
        self.completions = CompletionBatcher(self.db)
        # Jobs held to limits are claimed apart, under their limits' locks.
        self.flow = FlowClaimer(
            self.db,
            self.queues,
            worker_id=self.worker_id,
            lease_seconds=self.backend_config.lease_seconds,
        )
        # Whether limited jobs may be claimable: set at start, on every poll, when a wakeup
        # names a job the unlimited claim did not take, and when a limited job here ends.
        self._flow_due = True
        # When this worker last claimed the oldest due job ahead of priority order (fairness).
        self._oldest_claimed_at = time.monotonic()
        self.registry = WorkerRegistry(
            self.beat_db,
            self.worker_id,
            queues=self.queues,
            concurrency=config.concurrency,
            lease_seconds=self.backend_config.lease_seconds,
            retention_seconds=self.backend_config.worker_retention_seconds,
        )
        self.inflight: dict[uuid.UUID, JobHandle] = {}
        self.runners: set[asyncio.Task] = set()
        self.threads = JobThreads(config.concurrency, "leasequeue-job")
        # One thread blocks on BLPOP; the other makes short Redis calls that must not wait.
        self.redis_thread = ThreadPoolExecutor(1, thread_name_prefix="leasequeue-redis-wait")
        self.redis_calls = ThreadPoolExecutor(1, thread_name_prefix="leasequeue-redis")
        self.task_signals = TaskSignalDispatcher(type(backend))
        self.stopping = asyncio.Event()
        # The deadlines of the stop (runtime.shutdown); a new one when the stop is requested.
        self.stop_clock = StopClock(config.grace)
        self.hard_stop = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._redis_retry_at = 0.0
        self._redis_down = False
        self._garbage = _DroppedWakeups()
        # Whether Django's task signals reach a receiver; re-read for every claimed batch.
        self._send_started = self._send_finished = True
        # While claims come back full (a backlog), claim again only once this many slots are
        # free, so that each round trip serves several jobs; an idle worker claims at once.
        self._backlog_batch = max(1, config.concurrency // 2)
        # Whether the last claim came back full, and when PostgreSQL was last polled.
        self._backlog = False
        self._last_poll = 0.0

    # Lifecycle

    def request_stop(self) -> None:
        """Stop claiming and let jobs finish within grace. Asking again changes nothing: one
        stop request may arrive twice (systemd signals the whole group, and so does the
        supervisor)."""
        if not self.stopping.is_set():
            logger.info("Stopping: no new claims, %d job(s) in flight.", len(self.inflight))
            self.stop_clock = StopClock(self.config.grace)
            self.stopping.set()
            self._slot_freed.set()

    def request_stop_now(self) -> None:
        """Stop now: release the in-flight jobs' leases for another worker at once."""
        if not self.hard_stop.is_set():
            logger.warning("Stopping now: releasing %d in-flight job(s).", len(self.inflight))
        self.request_stop()
        self.stop_clock.grace_ends = 0.0
        self.hard_stop.set()

    async def run(self, on_started: Callable[[], None] | None = None) -> None:
        """Run until stopped; ``on_started`` is called once PostgreSQL took the first sweep."""
        logger.info(
            "Worker %s: queues=%s concurrency=%d wakeups=%s",
            self.worker_id,
            ",".join(self.queues) if self.queues else "*",
            self.config.concurrency,
            "redis" if self.use_wakeups else "off (polling)",
        )
        if not await unless_stopped(self._sweep_once(), self.stopping):
            await close_within(self.beat_db.close())
            logger.info("Worker %s stopped before PostgreSQL answered.", self.worker_id)
            return
        await self.registry.register()
        if on_started is not None:
            on_started()
        services = [
            asyncio.create_task(self._heartbeat_loop(), name="heartbeat"),
            asyncio.create_task(self._sweep_loop(), name="sweep"),
            asyncio.create_task(self.completions.run(), name="completions"),
            asyncio.create_task(self.task_signals.run(), name="task-signals"),
            asyncio.create_task(self._watch_loop(), name="watch"),
        ]
        if not self.config.burst:  # a burst drains the queues; it does not add to them
            scheduler = Scheduler(self.backend, self.beat_db, self.redis_calls, self.stopping)
            services.append(asyncio.create_task(scheduler.run(), name="scheduler"))
        claiming = asyncio.create_task(self._claim_then_drain(), name="claim")
        try:
            await self._until_claiming_ends(claiming, services)
        finally:
            batchers: dict[str, Batcher] = {
                "completions": self.completions,
                "task-signals": self.task_signals,
            }
            await stop_services(services, batchers, self.stop_clock)
            await self.registry.stopped()
            await close_within(self.db.close())
            await close_within(self.beat_db.close())
            self.redis_thread.shutdown(wait=False, cancel_futures=True)
            self.redis_calls.shutdown(wait=False, cancel_futures=True)
            self.threads.shutdown()
        logger.info("Worker %s stopped.", self.worker_id)

    async def _claim_then_drain(self) -> None:
        claiming = asyncio.create_task(self._claim_loop(), name="claim-loop")
        stop = asyncio.create_task(self.stopping.wait())
        await asyncio.wait([claiming, stop], return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        await end_claiming(claiming, self.stop_clock)
        if not claiming.cancelled() and claiming.exception() is not None:
            raise claiming.exception()  # type: ignore[misc]  # not None: checked above
        await self._drain()

    async def _until_claiming_ends(
        self, claiming: asyncio.Task, services: list[asyncio.Task]
    ) -> None:
        """Wait for the claimer to finish; if a service (heartbeat, sweep, completions, ...)
        dies meanwhile, stop at once so that the supervisor starts a healthy worker: a worker
        without heartbeats must not go on claiming."""
        pending = {claiming, *services}
        while claiming in pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is claiming or task.cancelled() or task.exception() is None:
                    continue
                logger.critical(
                    "The worker's %s service died (%r): stopping, so that the supervisor starts "
                    "a new worker.",
                    task.get_name(),
                    task.exception(),
                    exc_info=task.exception(),
                )
                self.failed = True
                self.request_stop_now()
        claiming.result()

    async def _drain(self) -> None:
        """Give in-flight jobs ``grace`` seconds, then release the rest for another worker."""
        if self.runners:
            grace = asyncio.create_task(self.hard_stop.wait())
            await asyncio.wait(  # type: ignore[type-var]  # a Task and a Future: both awaitables
                [grace, asyncio.gather(*self.runners, return_exceptions=True)],
                timeout=self.stop_clock.grace_left(),
                return_when=asyncio.FIRST_COMPLETED,
            )
            grace.cancel()
        for handle in list(self.inflight.values()):
            handle.stop(StopReason.SHUTDOWN)
        await end_runners(list(self.runners), self.stop_clock)

    # Claiming

    async def _claim_loop(self) -> None:
        """Claim rounds until stopped (or, in a burst, until nothing is due). A claim that
        PostgreSQL refuses (any error but a lost connection, which ``Database`` handles) costs
        one round: it is logged and tried again after a pause, the worker stays up."""
        refused = 0
        while not self.stopping.is_set():
            try:
                if await self._claim_round():
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

    async def _claim_round(self) -> bool:
        """One claim round; True when a burst has nothing left to do."""
        free = self.config.concurrency - len(self.inflight)
        if free <= 0 or (self._backlog and free < self._backlog_batch):
            self._slot_freed.clear()
            await self._slot_freed.wait()
            return False
        claimed: list[ClaimedJob] = []
        woken = False
        if self.fenced:  # PostgreSQL did not answer in time: claim nothing until it does
            await self._sleep_unless_stopping(self.backend_config.poll_seconds)
            return False
        sent_at = time.monotonic()
        if self._limited_claim_due(sent_at):
            self._flow_due = False
            claimed = await self.flow.claim(free)
            if claimed:
                self._start_batch(claimed, sent_at, limited=True)
                return False
        if self._backlog and self._oldest_first_due(sent_at):
            claimed = await self._claim_oldest()
        # A job held back by a rate limit may start before a wait on Redis would end: Redis
        # times a blocked pop out up to 100 ms late, so take what is there and wait here.
        rate_soon = self._wait_seconds() < self.backend_config.poll_seconds
        if not claimed and self.use_wakeups and time.monotonic() >= self._redis_retry_at:
            popped = await self._pop_wakeups(free, 0 if rate_soon else self._wait_seconds())
            # Garbage popped counts as woken: no poll (and no claim) for it.
            woken = popped is not None and popped.count > 0
            if popped is not None and popped.ids:
                claimed = await self.db.run(self._claim_by_ids(popped.ids))
                # A woken job not claimed may be one held to limits (or already taken).
                self._flow_due |= len(claimed) < len(popped.ids)
        poll_due = time.monotonic() - self._last_poll >= self.backend_config.poll_seconds
        if not claimed and (not woken or poll_due):
            self._last_poll = time.monotonic()
            self._flow_due = True
            claimed = await self.db.run(
                protocol.claim_batch(
                    self.queues,
                    free,
                    worker_id=self.worker_id,
                    lease_seconds=self.backend_config.lease_seconds,
                )
            )
            if len(claimed) == free:
                self._flow_due = False  # a full claim: no slot left for limited jobs
        self._backlog = len(claimed) >= free
        if claimed:
            self._start_batch(claimed, sent_at)
        if claimed or woken:
            return False
        if self.config.burst:
            if not self.inflight and self.flow.wake_at is None:
                await self._say_what_burst_leaves()
                return True
            self._slot_freed.clear()
            await self._wait_for_slot_or_rate()
        elif not self.use_wakeups or self._redis_down or rate_soon:
            await self._sleep_unless_stopping(self._wait_seconds())
        return False

    def _limited_claim_due(self, now: float) -> bool:
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

    async def _claim_oldest(self) -> list[ClaimedJob]:
        self._oldest_claimed_at = time.monotonic()
        oldest = await self.db.run(protocol.oldest_due_job(self.queues))
        return [] if oldest is None else await self.db.run(self._claim_by_ids([oldest]))

    async def _say_what_burst_leaves(self) -> None:
        """A burst ends when its queues have nothing due; say so, and name the due jobs it
        leaves in queues it does not serve (they wait for another worker)."""
        due = await self.db.run(protocol.due_by_queue())
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

    def _claim_by_ids(self, ids: list[uuid.UUID]) -> protocol.Statement[list[ClaimedJob]]:
        return protocol.claim_by_ids(
            ids, worker_id=self.worker_id, lease_seconds=self.backend_config.lease_seconds
        )

    async def _pop_wakeups(self, count: int, timeout: float) -> "_Popped | None":
        """Ids popped from Redis within ``timeout`` (0: only those there now; garbage dropped);
        None when Redis is unreachable."""
        loop = asyncio.get_running_loop()
        try:
            raw = await loop.run_in_executor(
                self.redis_thread,
                self.backend.wakeups.pop,
                self.wakeup_queues,
                count,
                timeout,
            )
        except RedisError as exc:
            if not self._redis_down:
                logger.warning("Redis unreachable (%s): polling PostgreSQL instead.", exc)
            self._redis_down = True
            self._redis_retry_at = time.monotonic() + _REDIS_RETRY_SECONDS
            return None
        if self._redis_down:
            logger.warning("Redis is back: waiting on wakeups again.")
            self._redis_down = False
        ids = []
        for item in raw:
            try:
                ids.append(uuid.UUID(item.decode()))
            except (ValueError, UnicodeDecodeError, AttributeError):
                self._garbage.drop(item)
        return _Popped(ids, len(raw))

    async def _sleep_unless_stopping(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    # Running

    def _start_batch(
        self, claimed: list[ClaimedJob], sent_at: float, *, limited: bool = False
    ) -> None:
        """One runner task per claimed job; whether task signals are wanted is read once.
        ``limited``: jobs held to limits, whose end may let another limited job start."""
        deadline = sent_at + self.backend_config.lease_seconds - self.fence_margin
        sender = type(self.backend)
        self._send_started = wanted(task_started, sender)
        self._send_finished = wanted(task_finished, sender)
        # Without Redis nobody can say which jobs a page follows: every job publishes (a
        # no-op without Channels). With it, the watch loop finds the followed ones.
        watched = not self.backend.wakeups.enabled
        for job in claimed:
            handle = JobHandle(
                job,
                db=self.db,
                progress_interval=self.backend_config.progress_interval_seconds,
                publish=apublish,
                max_value_bytes=self.backend_config.max_argument_bytes,
            )
            handle.watched = watched
            handle.fence_deadline = deadline
            handle.limited = limited
            metrics.started(job.queue_name, job.task_path, job.run_after, job.last_attempted_at)
            self.inflight[job.id] = handle
            runner = asyncio.create_task(self._run(handle), name=f"job-{job.id}")
            self.runners.add(runner)
            runner.add_done_callback(self.runners.discard)

    async def _watch_loop(self) -> None:
        """Every second, ask Redis which running jobs a browser page follows (one round trip
        for all of them, none per claim). A job that gains a viewer publishes its state, so
        the page catches up; the page's own database checks cover what happens in between."""
        if not self.backend.wakeups.enabled:
            return
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(_WATCH_REFRESH_SECONDS)
            handles = list(self.inflight.values())
            if not handles:
                continue
            ids = [str(handle.job.id) for handle in handles]
            try:
                watched = await loop.run_in_executor(
                    self.redis_calls, self.backend.wakeups.watched, ids
                )
            except RedisError:
                continue  # keep the last answer
            for handle, job_id in zip(handles, ids, strict=True):
                newly_watched = not handle.watched and job_id in watched
                handle.watched = job_id in watched
                if newly_watched:
                    await handle.publish_state()

    async def _run(self, handle: JobHandle) -> None:
        job = handle.job
        try:
            task = resolve(job)
            if isinstance(task, Outcome):
                await self._record(handle, None, task)
                return
            context = None
            if task.takes_context or self._send_started:
                running = self._task_result(job, task, TaskResultStatus.RUNNING)
                if self._send_started:
                    self.task_signals.emit(task_started, running)
                if task.takes_context:
                    context = JobContext(
                        task_result=running, handle=handle, database=self.backend_config.database
                    )
            # The task runs in this runner (no second asyncio task per job); while it does,
            # ``handle.stop()`` cancels the runner, which then records why it stopped.
            handle.task = runner = asyncio.current_task()
            try:
                outcome = await execute(
                    task, job, context, self.threads, self.backend_config.max_argument_bytes
                )
            except asyncio.CancelledError:
                # runner: this coroutine's asyncio task, never None inside one
                if handle.stop_reason is not None and runner.uncancel() == 0:  # type: ignore[union-attr]
                    handle.task = None
                    await self._after_stop(handle, task)
                    return
                raise
            handle.task = None
            if handle.refused is not None:  # a checkpoint or progress it could not save
                outcome = Outcome(error=error_of(handle.refused), retryable=False)
            else:
                await handle.flush_progress()
            await self._record(handle, task, outcome)
        except Exception:
            logger.exception("Job %s: the worker could not record its outcome.", job.id)
        finally:
            handle.cancel_timers()
            del self.inflight[job.id]
            self._flow_due |= handle.limited
            self.registry.jobs_done += 1
            self._slot_freed.set()

    async def _after_stop(self, handle: JobHandle, task: Task) -> None:
        job = handle.job
        if handle.completed_in_fence:
            await self._finished(handle, task, JobStatus.SUCCEEDED)
        elif handle.stop_reason == StopReason.LEASE_LOST:
            logger.warning("Job %s: lease lost; its outcome is discarded.", job.id)
        elif handle.stop_reason == StopReason.CANCEL_REQUESTED:
            if await self.db.run(protocol.finish_cancelled(handle.lease)):
                logger.info("Job %s (%s): cancelled.", job.id, job.task_path)
                await self._finished(handle, task, JobStatus.CANCELLED)
        elif await self.db.run(protocol.release(handle.lease)):
            logger.info("Job %s: released for another worker (shutdown).", job.id)
            await asyncio.get_running_loop().run_in_executor(
                self.redis_calls, self.backend.wakeups.push, [(job.queue_name, str(job.id))]
            )
            await handle.publish({"kind": "status", "status": JobStatus.RETRYING})

    async def _record(self, handle: JobHandle, task: Task | None, outcome: Outcome) -> None:
        job = handle.job
        applied = False
        if handle.completed_in_fence:
            applied, status = True, JobStatus.SUCCEEDED
        elif outcome.succeeded:
            try:
                # A success carries its result (Outcome.succeeded).
                result_json: str = outcome.result_json  # type: ignore[assignment]
                applied = await self.completions.complete(handle.lease, result_json)
                status = JobStatus.SUCCEEDED
            except psycopg.Error as exc:  # refused even alone: the attempt fails, saying why
                refused = UnstorableValue("return value", f"PostgreSQL refused it ({exc})")
                outcome = Outcome(error=error_of(refused), retryable=False)
        if not applied and not outcome.succeeded:
            failed = await self._fail(handle, outcome)
            applied = failed is not None
            status = JobStatus(failed.status) if failed else JobStatus.FAILED
            if failed and status == JobStatus.CANCELLED:
                logger.info("Job %s (%s): cancelled.", job.id, job.task_path)
            elif failed:
                logger.log(
                    logging.WARNING if status == JobStatus.RETRYING else logging.ERROR,
                    "Job %s (%s) attempt %d failed: %s%s",
                    job.id,
                    job.task_path,
                    job.attempt,
                    outcome.error["message"],  # type: ignore[index]  # as above
                    f"; retry at {failed.run_after:%H:%M:%S}"
                    if status == JobStatus.RETRYING
                    else "",
                )
        if not applied:
            logger.warning("Job %s: lease lost before its outcome was written; discarded.", job.id)
            metrics.stale_write(job.queue_name, job.task_path)
            return
        if task is not None:
            await self._finished(handle, task, status, outcome)
        else:
            metrics.finished(job.queue_name, job.task_path, status, handle.run_seconds())
            await handle.publish({"kind": "status", "status": status})

    async def _fail(self, handle: JobHandle, outcome: Outcome) -> protocol.FailOutcome | None:
        """Record a failed attempt. Should PostgreSQL refuse the error itself, record that
        instead, so the job still ends with a reason (not "lease expired" a lease later)."""
        statement = partial(
            protocol.fail,
            handle.lease,
            retryable=outcome.retryable,
            backoff_cap_seconds=self.backend_config.backoff_cap_seconds,
        )
        error = outcome.error or {}  # a failure carries its error
        try:
            return await self.db.run(
                statement(
                    exception_class_path=error["exception_class_path"],
                    message=error["message"],
                    traceback=error["traceback"],
                )
            )
        except psycopg.Error as exc:
            logger.error("Job %s: its error could not be stored (%s).", handle.job.id, exc)
            message = f"{error['message'][:200]} (its full error could not be stored: {exc})"
            return await self.db.run(
                statement(
                    exception_class_path=error["exception_class_path"],
                    message=escaped_text(message),
                    traceback="",
                )
            )

    async def _finished(
        self, handle: JobHandle, task: Task, status: JobStatus, outcome: Outcome | None = None
    ) -> None:
        job = handle.job
        metrics.finished(job.queue_name, job.task_path, status, handle.run_seconds())
        await handle.publish({"kind": "status", "status": status})
        if status == JobStatus.RETRYING or not self._send_finished:
            return
        errors = [outcome.error] if outcome and outcome.error else []
        result = self._task_result(
            handle.job,
            task,
            status.django_status,
            errors=errors,
            return_value=outcome.return_value if outcome else None,
        )
        self.task_signals.emit(task_finished, result, cancelled=status == JobStatus.CANCELLED)

    def _task_result(
        self,
        job: ClaimedJob,
        task: Task,
        status: TaskResultStatus,
        *,
        errors: list[dict[str, str]] | None = None,
        return_value: object = None,
    ) -> TaskResult:
        """The TaskResult of a job this worker holds, for Django's task signals."""
        alias = self.backend.alias
        return build_result(
            task_variant(task, job.priority, job.queue_name, alias),
            job_id=str(job.id),
            status=status,
            args=job.args,
            kwargs=job.kwargs,
            backend=alias,
            enqueued_at=job.enqueued_at,
            started_at=job.started_at,
            last_attempted_at=job.last_attempted_at,
            errors=[*job.errors, *(errors or [])],
            worker_ids=job.worker_ids,
            return_value=return_value,
        )

    # Maintenance

    async def _heartbeat_loop(self) -> None:
        """Renew every lease each ``heartbeat_seconds``; stop the jobs whose renewal cannot be
        confirmed before their deadline (self-fencing: their lease may be someone else's)."""
        while True:
            deadlines = [h.fence_deadline for h in self.inflight.values()]
            until_deadline = min(deadlines, default=float("inf")) - time.monotonic()
            await asyncio.sleep(
                max(0.0, min(self.backend_config.heartbeat_seconds, until_deadline))
            )
            self._stop_expired(time.monotonic())
            self.registry.beat(len(self.inflight))
            handles = [h for h in self.inflight.values() if h.stop_reason is None]
            if not handles and not self.fenced:
                continue
            sent_at = time.monotonic()
            deadline = min([h.fence_deadline for h in handles] or [sent_at + self.fence_margin * 5])
            statement = asyncio.create_task(
                self.beat_db.run(
                    protocol.heartbeat(
                        [handle.lease for handle in handles],
                        lease_seconds=self.backend_config.lease_seconds,
                    )
                )
            )
            done, _ = await asyncio.wait([statement], timeout=max(0.0, deadline - sent_at))
            if not done:
                self._self_fence(handles)
                self.beat_db.abandon(statement)
                continue
            try:
                reply = statement.result()
            except psycopg.Error as exc:
                # Refused, not unanswered: nothing was renewed. Jobs keep their deadlines and
                # stop at them (below) unless a later renewal goes through first.
                logger.error(
                    "Lease renewal failed (%s: %s); renewing again in %.1fs.",
                    type(exc).__name__,
                    str(exc).strip(),
                    self.backend_config.heartbeat_seconds,
                )
                self._stop_expired(time.monotonic())
                continue
            if self.fenced:
                logger.warning("PostgreSQL answers again: claiming again.")
                self.fenced = False
            renewed_until = sent_at + self.backend_config.lease_seconds - self.fence_margin
            for handle in handles:
                if handle.job.id not in reply.held:
                    handle.stop(StopReason.LEASE_LOST)
                elif handle.job.id in reply.cancel_requested:
                    handle.stop(StopReason.CANCEL_REQUESTED)
                if handle.job.id in reply.renewed:
                    handle.fence_deadline = renewed_until
            self._stop_expired(time.monotonic())

    def _self_fence(self, handles: list[JobHandle]) -> None:
        """No confirmed renewal before the deadline: stop those jobs, claim nothing more."""
        if not self.fenced:
            logger.error(
                "PostgreSQL did not confirm lease renewals in time: stopping %d job(s) before "
                "their leases can expire, and claiming nothing until it answers again.",
                len(handles),
            )
        self.fenced = True
        for handle in handles:
            handle.stop(StopReason.LEASE_LOST)

    def _stop_expired(self, now: float) -> None:
        """Jobs held but not renewed (an operator holds their row) stop at their own deadline."""
        for handle in list(self.inflight.values()):
            if handle.stop_reason is None and handle.fence_deadline <= now:
                logger.warning("Job %s: lease not renewed in time; stopping it.", handle.job.id)
                handle.stop(StopReason.LEASE_LOST)

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.backend_config.sweep_seconds)
            try:
                await self._sweep_once()
            except Exception:
                logger.exception("Recover sweep failed; trying again next interval.")

    async def _sweep_once(self) -> None:
        """Recover expired leases (in bounded batches) and wake workers for forgotten due jobs."""
        while True:
            swept = await self.beat_db.run(
                protocol.recover_expired(
                    limit=self.backend_config.sweep_batch,
                    backoff_cap_seconds=self.backend_config.backoff_cap_seconds,
                )
            )
            for job in swept:
                logger.warning("Job %s: lease expired, now %s.", job.id, job.status)
                metrics.recovered(job.queue_name, job.task_path, job.status)
            if len(swept) < self.backend_config.sweep_batch:
                break
        if self.use_wakeups and not self._redis_down:
            stale = await self.beat_db.run(
                protocol.stale_due_jobs(
                    older_than_seconds=self.backend_config.resignal_after_seconds,
                    limit=self.backend_config.sweep_batch,
                )
            )
            if stale:
                pairs = [(row["queue_name"], str(row["id"])) for row in stale]
                await asyncio.get_running_loop().run_in_executor(
                    self.redis_calls, self.backend.wakeups.push_where_idle, pairs
                )
