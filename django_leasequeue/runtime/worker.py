"""One worker process's event loop: wires its services (claimer, heartbeat, recover sweep,
viewer watch, scheduler, completion and signal batchers), runs one runner per claimed job, and
stops: no new claims, ``--grace`` for the jobs in flight, then the rest handed back."""

import asyncio
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.hooks import FinishOutcome, run_after_finish
from django_leasequeue.human_duration import duration
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.progress_events import apublish
from django_leasequeue.runtime.batching import Batcher
from django_leasequeue.runtime.claimer import Claimer
from django_leasequeue.runtime.completions import CompletionBatcher
from django_leasequeue.runtime.config import WorkerConfig
from django_leasequeue.runtime.context import JobContext
from django_leasequeue.runtime.database import Database, postgres_outage
from django_leasequeue.runtime.execution import AttemptEnd, error_of, resolve, run_attempt
from django_leasequeue.runtime.heartbeat import Heartbeat
from django_leasequeue.runtime.job_handle import JobHandle, StopReason
from django_leasequeue.runtime.job_logging import set_current
from django_leasequeue.runtime.outcomes import OutcomeRecorder
from django_leasequeue.runtime.recover import RecoverSweep
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
from django_leasequeue.runtime.signal_dispatch import TaskSignalDispatcher
from django_leasequeue.runtime.threads import JobThreads
from django_leasequeue.runtime.watch import ViewerWatch
from django_leasequeue.runtime.worker_id import new_worker_id
from django_leasequeue.runtime.workflow_steps import ReleasedStepsWaker, with_upstream
from django_leasequeue.sql.records import ClaimedJob

logger = logging.getLogger(__name__)


class WorkerLoop:
    """The asyncio side of one worker process (``runtime.process`` starts it)."""

    def __init__(
        self, backend: LeaseQueueBackend, config: WorkerConfig, worker_id: str | None = None
    ) -> None:
        self.backend = backend
        self.backend_config = backend_config = backend.config
        # Imported once, now: a hook that cannot load stops the worker before it claims.
        self.hooks = backend.hooks
        self.config = config
        self.worker_id = worker_id or new_worker_id()
        self.queues = None if config.queues is None else list(config.queues)
        # Redis lists to wait on: the named queues, or every queue the backend declares.
        wakeup_queues = self.queues or sorted(backend.queues)
        self.use_wakeups = backend.wakeups.enabled and bool(wakeup_queues) and not config.burst
        # Both connections' failures, as one outage of this process's PostgreSQL.
        self.postgres = postgres_outage()
        self.db = self._database("work")
        # Heartbeats and sweeps get their own connection so claims never delay them.
        self.beat_db = self._database("heartbeat")
        # Set when a service task died: the process exits non-zero, to be restarted.
        self.failed = False
        # Why a burst gave up waiting for PostgreSQL (--max-wait); None while it has not.
        self.gave_up: str | None = None
        self.in_flight: dict[uuid.UUID, JobHandle] = {}
        self.runners: set[asyncio.Task] = set()
        self.threads = JobThreads(config.concurrency, "leasequeue-job")
        # One thread blocks on BLPOP; the other makes short Redis calls that must not wait.
        self.redis_thread = ThreadPoolExecutor(1, thread_name_prefix="leasequeue-redis-wait")
        self.redis_calls = ThreadPoolExecutor(1, thread_name_prefix="leasequeue-redis")
        self.stopping = asyncio.Event()
        # The deadlines of the stop (runtime.shutdown); a new one when the stop is requested.
        self.stop_clock = StopClock(config.grace)
        self.hard_stop = asyncio.Event()
        self.registry = WorkerRegistry(
            self.beat_db,
            self.worker_id,
            queues=self.queues,
            concurrency=config.concurrency,
            lease_seconds=backend_config.lease_seconds,
            retention_seconds=backend_config.worker_retention_seconds,
        )
        self.heartbeat = Heartbeat(
            self.beat_db,
            self.in_flight,
            lease_seconds=backend_config.lease_seconds,
            heartbeat_seconds=backend_config.heartbeat_seconds,
            on_tick=self.registry.beat,
        )
        self.claimer = Claimer(
            db=self.db,
            backend_config=backend_config,
            config=config,
            wakeups=backend.wakeups,
            wakeup_queues=wakeup_queues,
            use_wakeups=self.use_wakeups,
            worker_id=self.worker_id,
            redis_thread=self.redis_thread,
            stopping=self.stopping,
            in_flight=self.in_flight.__len__,
            fenced=lambda: self.heartbeat.fenced,
            expiring_waiting=lambda: self.sweep.expiring_waiting,
            start_jobs=self._start_jobs,
        )
        self.sweep = RecoverSweep(
            self.beat_db,
            backend_config,
            backend.wakeups,
            self.redis_calls,
            wakeups_usable=lambda: self.use_wakeups and not self.claimer.redis_down,
        )
        self.watch = ViewerWatch(backend.wakeups, self.redis_calls, self.in_flight)
        self.released_steps = ReleasedStepsWaker(self.db, backend.wakeups, self.redis_calls)
        self.completions = CompletionBatcher(self.db, self.released_steps)
        self.task_signals = TaskSignalDispatcher(type(backend))
        self.outcomes = OutcomeRecorder(
            db=self.db,
            backend_alias=backend.alias,
            backend_config=backend_config,
            wakeups=backend.wakeups,
            redis_calls=self.redis_calls,
            completions=self.completions,
            task_signals=self.task_signals,
            signal_sender=type(backend),
            released_steps=self.released_steps,
        )

    def _database(self, name: str) -> Database:
        return Database(
            self.backend_config.database,
            prepared_statements=self.backend_config.prepared_statements,
            name=name,
            lease_seconds=self.backend_config.lease_seconds,
            outage=self.postgres,
        )

    # Lifecycle

    def request_stop(self) -> None:
        """Stop claiming and let jobs finish within grace. Asking again changes nothing: one
        stop request may arrive twice (systemd signals the whole group, and so does the
        supervisor)."""
        if not self.stopping.is_set():
            logger.info("Stopping: no new claims, %d job(s) in flight.", len(self.in_flight))
            self.stop_clock = StopClock(self.config.grace)
            self.stopping.set()
            self.claimer.wake()

    def request_stop_now(self) -> None:
        """Stop now: hand the in-flight jobs back for another worker at once."""
        if not self.hard_stop.is_set():
            logger.warning("Stopping now: handing back %d in-flight job(s).", len(self.in_flight))
        self.request_stop()
        self.stop_clock.grace_ends = 0.0
        self.hard_stop.set()

    async def run(self, on_started: Callable[[], None] | None = None) -> None:
        """Run until stopped; ``on_started`` is called once PostgreSQL answered the first
        recovery of leases."""
        logger.info(
            "Worker %s: queues=%s concurrency=%d wakeups=%s",
            self.worker_id,
            ",".join(self.queues) if self.queues else "*",
            self.config.concurrency,
            "redis" if self.use_wakeups else "off (polling)",
        )
        waiting = asyncio.create_task(self._give_up_waiting(), name="max-wait")
        try:
            await self._serve(on_started)
        finally:
            waiting.cancel()

    async def _serve(self, on_started: Callable[[], None] | None) -> None:
        """The leases' recovery (waiting for PostgreSQL), then the services until claiming
        ends."""
        if not await unless_stopped(self.sweep.before_first_claim(), self.stopping):
            await close_within(self.beat_db.close())
            logger.info("Worker %s stopped before PostgreSQL answered.", self.worker_id)
            return
        await self.registry.register()
        if on_started is not None:
            on_started()
        services = [
            asyncio.create_task(self.heartbeat.run(), name="heartbeat"),
            asyncio.create_task(self.sweep.run(), name="sweep"),
            asyncio.create_task(self.completions.run(), name="completions"),
            asyncio.create_task(self.task_signals.run(), name="task-signals"),
            asyncio.create_task(self.released_steps.run(), name="released-steps"),
            asyncio.create_task(self.watch.run(), name="watch"),
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
                "released-steps": self.released_steps,
            }
            await stop_services(services, batchers, self.stop_clock)
            await self.registry.stopped()
            await close_within(self.db.close())
            await close_within(self.beat_db.close())
            self.redis_thread.shutdown(wait=False, cancel_futures=True)
            self.redis_calls.shutdown(wait=False, cancel_futures=True)
            self.threads.shutdown()
        logger.info("Worker %s stopped.", self.worker_id)

    async def _give_up_waiting(self) -> None:
        """A burst stops now once PostgreSQL has not answered for ``--max-wait`` seconds (its
        process then exits non-zero); a service waits for ever."""
        if not self.config.burst:
            return
        while (down_for := self.postgres.down_for()) < self.config.max_wait:
            await asyncio.sleep(min(1.0, self.config.max_wait - down_for))
        self.gave_up = (
            f"PostgreSQL has not answered for {duration(down_for)}: the burst gives up "
            f"(--max-wait {self.config.max_wait:g})."
        )
        logger.error("%s", self.gave_up)
        self.request_stop_now()

    async def _claim_then_drain(self) -> None:
        claiming = asyncio.create_task(self.claimer.run(), name="claim-loop")
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
            for service in done:
                if service is claiming or service.cancelled() or service.exception() is None:
                    continue
                logger.critical(
                    "The worker's %s service died (%r): stopping, so that the supervisor starts "
                    "a new worker.",
                    service.get_name(),
                    service.exception(),
                    exc_info=service.exception(),
                )
                self.failed = True
                self.request_stop_now()
        claiming.result()

    async def _drain(self) -> None:
        """Give in-flight jobs ``grace`` seconds, then hand the rest back for another worker."""
        if self.runners:
            grace = asyncio.create_task(self.hard_stop.wait())
            await asyncio.wait(  # type: ignore[type-var]  # a Task and a Future: both awaitables
                [grace, asyncio.gather(*self.runners, return_exceptions=True)],
                timeout=self.stop_clock.grace_left(),
                return_when=asyncio.FIRST_COMPLETED,
            )
            grace.cancel()
        for handle in list(self.in_flight.values()):
            handle.stop(StopReason.SHUTDOWN)
        await end_runners(list(self.runners), self.stop_clock)

    # Running jobs

    def _start_jobs(self, claimed: list[ClaimedJob], sent_at: float, flow_limited: bool) -> None:
        """One runner per claimed job; whether task signals are wanted is read once.
        ``flow_limited``: jobs held to limits, whose end may let another one start."""
        deadline = self.heartbeat.deadline(sent_at)
        self.outcomes.read_receivers()
        # Without Redis nobody can say which jobs a page follows: every job publishes (a
        # no-op without Channels). With it, the viewer watch finds the followed ones.
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
            handle.workflow_watched = watched and job.workflow_id is not None
            handle.fence_deadline = deadline
            handle.flow_limited = flow_limited
            metrics.started(job.queue_name, job.task_path, job.run_after, job.last_attempted_at)
            self.in_flight[job.id] = handle
            runner = asyncio.create_task(self._run(handle), name=f"job-{job.id}")
            self.runners.add(runner)
            runner.add_done_callback(self.runners.discard)

    async def _run(self, handle: JobHandle) -> None:
        """One job's runner: resolve, call within its timeout, record the outcome, then tell
        the hooks' ``after_finish``."""
        job = handle.job
        set_current(job)  # this runner's log records are about the job (runtime.job_logging)
        finished = None
        try:
            finished = await self._attempt(handle)
        except Exception:
            logger.exception("Job %s: the worker could not record its outcome.", job.id)
        finally:
            handle.cancel_timers()
            del self.in_flight[job.id]
            self.registry.jobs_done += 1
            self.claimer.slot_freed(flow_limited=handle.flow_limited)
        # Once the job is out of the heartbeat's leases (its outcome is written) and its slot
        # is free: a slow hook holds up no other job. A failing hook is logged there.
        if finished is not None and self.hooks.after_finish:
            await run_after_finish(self.hooks, job, finished, self.threads.run)

    async def _attempt(self, handle: JobHandle) -> FinishOutcome | None:
        """Resolve the job, run it, write its outcome; returns the outcome written (None when
        its lease was lost, or it was handed back)."""
        job = handle.job
        upstream = None
        if job.upstream is not None:  # a chain or chord step: its arguments start with them
            job, upstream = await with_upstream(self.db, job)
        task = resolve(job)
        if isinstance(task, AttemptEnd):
            return await self.outcomes.record(handle, None, task)
        context = None
        wrappers = self.hooks.wrap_run
        if task.takes_context or self.outcomes.send_started or wrappers:
            running = self.outcomes.started(job, task)
            if task.takes_context or wrappers:  # a hook's wrap_run gets the context too
                if task.takes_context and upstream is None and job.workflow_id is not None:
                    job, upstream = await with_upstream(self.db, job)
                context = JobContext(
                    task_result=running,
                    handle=handle,
                    database=self.backend_config.database,
                    upstream_results=upstream or {},
                )
        # The task runs in this runner (no second asyncio task per job); while it does,
        # ``handle.stop()`` cancels the runner, which then records why it stopped.
        handle.runner = runner = asyncio.current_task()
        try:
            outcome = await run_attempt(
                task, job, context, self.threads, self.backend_config.max_argument_bytes, wrappers
            )
        except asyncio.CancelledError:
            if handle.stop_reason is not None and runner.uncancel() == 0:  # type: ignore[union-attr]
                handle.runner = None
                return await self.outcomes.record_stop(handle, task)
            raise
        handle.runner = None
        if handle.refused is not None:  # a checkpoint or progress it could not save
            outcome = AttemptEnd(error=error_of(handle.refused), retryable=False)
        else:
            await handle.flush_progress()
        return await self.outcomes.record(handle, task, outcome)
