"""``DrainHandle``: one job's attempt in a drain or ``run_job``, as its ``JobContext`` reaches
it: progress and checkpoints written at once, fenced by the lease, on Django's connection in the
caller's thread (an async task's calls hop to that thread), at the drain's clock."""

from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async

from django_leasequeue import jsonargs
from django_leasequeue.exceptions import LeaseLost, UnstorableValue
from django_leasequeue.runtime.job_handle import StopReason, checked_progress, refuse_on_loop
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.clock import at_clock
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.records import ClaimedJob


class DrainHandle:
    """The ``AttemptHandle`` of a job run in the test's process. Unlike a worker's, it writes
    every progress report (no throttle: a test reads each one back) and publishes nothing live;
    a write its lease fence refuses (another process took the job: only outside a test's
    transaction) stops it as in a worker."""

    def __init__(
        self, job: ClaimedJob, *, database: str, clock: datetime, max_value_bytes: int | None
    ) -> None:
        self.job = job
        self.lease = job.lease
        self.checkpoint: Any = job.checkpoint
        self.completed_in_fence = False
        self.stop_reason: StopReason | None = None
        # A checkpoint or progress report refused as unstorable: the attempt fails with it.
        self.refused: UnstorableValue | None = None
        self._database = database
        self._clock = clock
        self._max_value_bytes = max_value_bytes

    @property
    def lease_lost(self) -> bool:
        return self.stop_reason == StopReason.LEASE_LOST

    def progress_sync(self, current: float, total: float | None, message: str) -> bool:
        refuse_on_loop()
        try:
            report = checked_progress(current, total, message)
        except UnstorableValue as exc:
            raise self._refuse(exc) from None
        if self.stop_reason is None and execute(
            at_clock(jobs_sql.progress(self.lease, *report), self._clock), self._database
        ):
            return True
        self.stop_reason = StopReason.LEASE_LOST
        return False

    async def progress(self, current: float, total: float | None, message: str) -> bool:
        return await sync_to_async(self.progress_sync, thread_sensitive=True)(
            current, total, message
        )

    def save_checkpoint_sync(self, data: Any) -> None:
        refuse_on_loop()
        try:
            data_json = jsonargs.encode(data, "checkpoint", self._max_value_bytes)
        except UnstorableValue as exc:
            raise self._refuse(exc) from None
        if self.stop_reason is None and execute(
            at_clock(jobs_sql.checkpoint(self.lease, data_json), self._clock), self._database
        ):
            self.checkpoint = data
            return
        self.stop_reason = StopReason.LEASE_LOST
        raise LeaseLost(f"Job {self.job.id}: lease lost, checkpoint not saved.")

    async def save_checkpoint(self, data: Any) -> None:
        await sync_to_async(self.save_checkpoint_sync, thread_sensitive=True)(data)

    def _refuse(self, error: UnstorableValue) -> UnstorableValue:
        """Remember the first refused write: the attempt fails with it, even if the task
        catches the exception and goes on (as in a worker)."""
        if self.refused is None:
            self.refused = error
        return error
