"""``JobHandle``: one running job's state, shared by its runner, the heartbeat and its context."""

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

import psycopg

from django_leasequeue import jsonargs
from django_leasequeue.choices import JobStatus
from django_leasequeue.exceptions import LeaseLost, UnstorableValue
from django_leasequeue.metrics import counters as metrics
from django_leasequeue.progress_events import apublish_workflow
from django_leasequeue.runtime.database import Database
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.records import ClaimedJob

logger = logging.getLogger(__name__)

Publish = Callable[[Any, dict[str, Any]], Awaitable[None]]


def checked_progress(
    current: float, total: float | None, message: str
) -> tuple[float, float | None, str]:
    """A progress report as stored; raises ``UnstorableValue`` saying what no row can hold (a
    number that is not a finite number, a message that is not storable text)."""
    problem = None
    numbers = {"current": current} if total is None else {"current": current, "total": total}
    for name, number in numbers.items():
        if not isinstance(number, int | float) or isinstance(number, bool):
            problem = f"{name} is {number!r:.40}, not a number"
        elif not math.isfinite(number):
            problem = f"{name} is {number!r}, not a finite number"
    if not isinstance(message, str):
        problem = f"the message is a {type(message).__name__}, not a string"
    elif (text := jsonargs.text_problem(message)) is not None:
        problem = f"the message has a {text}"
    if problem is not None:
        raise UnstorableValue("progress", problem)
    return float(current), None if total is None else float(total), message


def refuse_on_loop() -> None:
    """Raise RuntimeError when called on an event loop: a context's sync method, called from an
    async task, would block the loop waiting for the database."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError("In an async task, await the a-prefixed method (e.g. aprogress).")


class StopReason(StrEnum):
    """Why the worker cancelled a job's coroutine; decides what it writes afterwards."""

    LEASE_LOST = "lease lost"  # write nothing: another worker owns the job now
    CANCEL_REQUESTED = "cancel requested"  # finish it cancelled
    SHUTDOWN = "shutdown"  # release the lease so another worker takes it at once


class JobHandle:
    def __init__(
        self,
        job: ClaimedJob,
        *,
        db: Database,
        progress_interval: float,
        publish: Publish,
        max_value_bytes: int | None = None,
    ) -> None:
        self.job = job
        self.lease = job.lease
        self.db = db
        self.loop = asyncio.get_running_loop()
        self.checkpoint: Any = job.checkpoint
        self.stop_reason: StopReason | None = None
        self.completed_in_fence = False
        # A checkpoint or progress report refused as unstorable: the attempt fails with it.
        self.refused: UnstorableValue | None = None
        # The asyncio task running the job while its function runs (``stop`` cancels it).
        self.runner: asyncio.Task | None = None
        # Whether a browser page follows this job live, or its workflow; refreshed by the worker.
        self.watched = False
        self.workflow_watched = False
        # Monotonic time by which the worker must confirm a renewal or stop the job itself.
        self.fence_deadline = float("inf")
        # Whether the job is held to flow-control limits (its end may let another one start).
        self.flow_limited = False
        self.claimed_at = time.monotonic()
        self._publish = publish
        # The largest checkpoint, as JSON (the backend's max_argument_bytes).
        self._max_value_bytes = max_value_bytes
        self._progress_interval = progress_interval
        self._last_progress_at = 0.0
        self._pending_progress: tuple[float, float | None, str] | None = None
        self._last_progress_event: dict[str, Any] | None = None
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flush_task: asyncio.Task[bool] | None = None

    @property
    def lease_lost(self) -> bool:
        return self.stop_reason == StopReason.LEASE_LOST

    def stop(self, reason: StopReason) -> None:
        """Cancel the job's coroutine (once); the runner reads ``stop_reason`` to finish it."""
        if self.stop_reason is None:
            self.stop_reason = reason
        if self.runner is not None and not self.runner.done():
            self.runner.cancel(reason)

    async def progress(self, current: float, total: float | None, message: str) -> bool:
        """Persist and publish at most one update per interval; the latest one always lands.

        A report that cannot be stored raises ``UnstorableValue`` here, before it is queued."""
        try:
            self._pending_progress = checked_progress(current, total, message)
        except UnstorableValue as exc:
            raise self._refuse(exc) from None
        wait = self._last_progress_at + self._progress_interval - time.monotonic()
        finished = total is not None and current >= total
        if wait > 0 and not finished:
            if self._flush_timer is None:
                self._flush_timer = self.loop.call_later(wait, self._schedule_flush)
            return self.stop_reason is None
        return await self.flush_progress()

    def progress_sync(self, current: float, total: float | None, message: str) -> bool:
        """``progress`` from a sync task's thread, through the worker's loop."""
        refuse_on_loop()
        return asyncio.run_coroutine_threadsafe(
            self.progress(current, total, message), self.loop
        ).result()

    def _refuse(self, error: UnstorableValue) -> UnstorableValue:
        """Remember the first refused write: the attempt fails with it, even if the task
        catches the exception and goes on (what it meant to save was not saved)."""
        if self.refused is None:
            self.refused = error
        return error

    def _schedule_flush(self) -> None:
        self._flush_timer = None
        # Keep a reference: the loop holds tasks weakly, and a dropped one may vanish mid-write.
        self._flush_task = self.loop.create_task(self.flush_progress())

    async def flush_progress(self) -> bool:
        """Write the pending report; False once the job is stopping (nothing more is written)."""
        pending, self._pending_progress = self._pending_progress, None
        if self.stop_reason is not None:
            return False
        if pending is None:
            return True
        self._last_progress_at = time.monotonic()
        try:
            applied = await self.db.run(jobs_sql.progress(self.lease, *pending))
        except psycopg.Error as exc:  # a report is not worth the job: the next one may land
            logger.warning("Job %s: progress not written (%s).", self.job.id, exc)
            return True
        if not applied:
            self._not_written("progress")
            return False
        current, total, message = pending
        event = {"kind": "progress", "current": current, "total": total, "message": message}
        self._last_progress_event = event
        await self.publish(event)
        return True

    async def publish_state(self) -> None:
        """Tell a page that just started following this job where it stands."""
        await self.publish({"kind": "status", "status": JobStatus.RUNNING})
        if self._last_progress_event is not None:
            await self.publish(self._last_progress_event)

    async def publish(self, event: dict[str, Any]) -> None:
        """Send a live event, only while a page watches this job (or its workflow)."""
        if self.watched:
            await self._publish(self.job.id, event)
        if self.workflow_watched and self.job.workflow_id is not None:
            await apublish_workflow(self.job.workflow_id, event)

    async def save_checkpoint(self, data: Any) -> None:
        try:
            data_json = jsonargs.encode(data, "checkpoint", self._max_value_bytes)
        except UnstorableValue as exc:
            raise self._refuse(exc) from None
        if self.stop_reason is None and await self.db.run(
            jobs_sql.checkpoint(self.lease, data_json)
        ):
            self.checkpoint = data
            return
        self._not_written("checkpoint")
        raise LeaseLost(f"Job {self.job.id}: {self.stop_reason}, checkpoint not saved.")

    def save_checkpoint_sync(self, data: Any) -> None:
        """``save_checkpoint`` from a sync task's thread, through the worker's loop."""
        refuse_on_loop()
        asyncio.run_coroutine_threadsafe(self.save_checkpoint(data), self.loop).result()

    def cancel_timers(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None

    def run_seconds(self) -> float:
        """How long since the claim: the attempt's run time once its outcome is known."""
        return time.monotonic() - self.claimed_at

    def _not_written(self, what: str) -> None:
        """A write the fence refused means the lease is lost, unless the job was already stopping
        (cancelled, or released at shutdown): then nothing more is written, as intended."""
        if self.stop_reason is None:
            self.stop(StopReason.LEASE_LOST)
        if self.stop_reason == StopReason.LEASE_LOST:
            logger.warning("Job %s: lease lost, %s not written.", self.job.id, what)
            metrics.stale_write(self.job.queue_name, self.job.task_path)
        else:
            logger.debug("Job %s: %s, %s not written.", self.job.id, self.stop_reason, what)
