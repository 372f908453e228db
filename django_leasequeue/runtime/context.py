"""``JobContext``: what a ``takes_context`` task receives, a subclass of Django's TaskContext."""

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn, Protocol
from uuid import UUID

from django_leasequeue.exceptions import Snooze
from django_leasequeue.fencing import FencedTransaction, fenced_atomic
from django_leasequeue.sql.records import ClaimedJob, Lease
from django_leasequeue.tasks_framework import TaskContext


class AttemptHandle(Protocol):
    """One running attempt's state and its fenced writes, as a context reaches them: a worker's
    ``JobHandle``, or the testing drain's ``DrainHandle`` (``django_leasequeue.testing``)."""

    job: ClaimedJob
    lease: Lease
    # What the latest checkpoint saved (the claimed row's, then this attempt's).
    checkpoint: Any
    # Set when the task completed the job itself, inside ``fenced_atomic``.
    completed_in_fence: bool

    @property
    def stop_reason(self) -> object | None: ...

    @property
    def lease_lost(self) -> bool: ...

    async def progress(self, current: float, total: float | None, message: str) -> bool: ...

    def progress_sync(self, current: float, total: float | None, message: str) -> bool: ...

    async def save_checkpoint(self, data: Any) -> None: ...

    def save_checkpoint_sync(self, data: Any) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class JobContext(TaskContext):  # type: ignore[misc]  # django-stubs: not frozen; Django's is
    """Adds progress, checkpoints, snoozes, fenced writes and stop flags to Django's
    TaskContext.

    The ``a``-prefixed methods are coroutines, for ``async def`` tasks. On the event loop (an
    ``async def`` task) the plain ``progress`` and ``checkpoint`` raise RuntimeError and
    entering ``fenced_atomic`` raises Django's SynchronousOnlyOperation: each would block the
    loop waiting for the database. ``snooze`` only raises ``Snooze``: it works from both.
    """

    handle: AttemptHandle
    database: str = "default"
    # A workflow step's direct upstream steps: {step name: return value} (empty elsewhere).
    upstream_results: dict[str, Any] = field(default_factory=dict)

    @property
    def job_id(self) -> UUID:
        return self.handle.job.id

    @property
    def meta(self) -> dict[str, Any]:
        """The metadata stored with the job at enqueue (``.using(meta=...)``, hooks)."""
        return self.handle.job.meta

    @property
    def last_checkpoint(self) -> Any:
        """What the latest checkpoint saved, in this attempt or an earlier one (or None)."""
        return self.handle.checkpoint

    @property
    def lease_lost(self) -> bool:
        """True once another worker owns this job: stop, nothing more will be written."""
        return self.handle.lease_lost

    @property
    def should_stop(self) -> bool:
        """True when the job was cancelled, lost its lease, or the worker is shutting down."""
        return self.handle.stop_reason is not None

    async def aprogress(
        self, current: float, total: float | None = None, message: str = ""
    ) -> bool:
        """Report progress (persisted fenced and throttled, pushed live); False if lease lost."""
        return await self.handle.progress(current, total, message)

    def progress(self, current: float, total: float | None = None, message: str = "") -> bool:
        return self.handle.progress_sync(current, total, message)

    async def acheckpoint(self, data: Any) -> None:
        """Save JSON state a later attempt resumes from; raises LeaseLost if not saved."""
        await self.handle.save_checkpoint(data)

    def checkpoint(self, data: Any) -> None:
        self.handle.save_checkpoint_sync(data)

    async def asnooze(self, seconds: float | timedelta) -> NoReturn:
        """End this attempt and run the job again in ``seconds``, the attempt not counted:
        raises ``Snooze`` (let it propagate). Past the task's ``max_snoozes`` the job fails."""
        raise Snooze(seconds)

    def snooze(self, seconds: float | timedelta) -> NoReturn:
        raise Snooze(seconds)

    def fenced_atomic(self) -> AbstractContextManager[FencedTransaction]:
        """A transaction that commits the task's writes only while the lease is held.

        Sync tasks only (Django's ORM transactions are bound to a thread). Calling
        ``complete(result)`` on the yielded handle finishes the job in the same transaction.
        """
        return _RecordingFence(self.handle, self.database)


class _RecordingFence(AbstractContextManager[FencedTransaction]):
    """``fenced_atomic`` that tells the runner when the task completed the job itself."""

    def __init__(self, handle: AttemptHandle, database: str) -> None:
        self._handle = handle
        self._inner = fenced_atomic(handle.lease, database)
        self._fence: FencedTransaction | None = None

    def __enter__(self) -> FencedTransaction:
        self._fence = self._inner.__enter__()
        return self._fence

    def __exit__(self, *exc_info: Any) -> bool | None:
        suppressed = self._inner.__exit__(*exc_info)
        if exc_info[0] is None and self._fence is not None and self._fence.completed:
            self._handle.completed_in_fence = True
        return suppressed
