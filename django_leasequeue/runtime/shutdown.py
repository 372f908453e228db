"""The end of a worker's life, bounded in time whatever PostgreSQL does.

A stop must finish within ``--grace`` plus a few seconds even when PostgreSQL does not answer:
a statement waits on a silent network for up to ``tcp_user_timeout``, a lost connection is
retried for ever (``runtime.database``), and even cancelling a statement sends a cancel request
that may wait. So a stop runs on one clock: the grace counts from the stop request (a claim in
flight is waited for within it), then everything still to be written (releases, completions,
task signals) shares ``STOP_SECONDS``; what is still waiting then is cancelled. Nothing is lost
by that: a job whose outcome was not written keeps its lease until it expires, and then another
worker runs it again.
"""

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from django_leasequeue.human_duration import duration
from django_leasequeue.runtime.batching import Batcher

logger = logging.getLogger(__name__)

# How long, after the grace, the stopped jobs and the batchers together get to write.
STOP_SECONDS = 3.0
# How long a cancelled task gets to unwind (twice: a second cancel ends psycopg's own wait for
# its cancel request), a claim in flight at least, and a connection to close.
UNWIND_SECONDS = 0.5


class StopClock:
    """The deadlines of one stop, on the monotonic clock."""

    def __init__(self, grace: float) -> None:
        self.grace_ends = time.monotonic() + grace
        self.writes_end: float | None = None

    def grace_left(self) -> float:
        return max(0.0, self.grace_ends - time.monotonic())

    def writes_left(self) -> float:
        """Time left for the last writes; their ``STOP_SECONDS`` start at the first call
        (the grace is over, or was cut short by a second stop signal or a dead service)."""
        if self.writes_end is None:
            self.writes_end = time.monotonic() + STOP_SECONDS
        return max(UNWIND_SECONDS, self.writes_end - time.monotonic())


async def unless_stopped(awaitable: Coroutine[Any, Any, None], stopping: asyncio.Event) -> bool:
    """Await ``awaitable``, the worker's first statement, unless a stop is requested first (a
    worker starting while PostgreSQL is down waits for it, but not past a stop request);
    whether it finished."""
    began = time.monotonic()
    task = asyncio.ensure_future(awaitable)
    stop = asyncio.create_task(stopping.wait())
    await asyncio.wait([task, stop], return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if task.done():
        task.result()  # its error, if any, is the caller's
        return True
    logger.warning(
        "Stopping: gave up waiting for PostgreSQL's first answer after %s of trying.",
        duration(time.monotonic() - began),
    )
    await _cancel({task})
    return False


async def end_claiming(claiming: asyncio.Task, clock: StopClock) -> None:
    """Let the claim loop see the stop; a claim PostgreSQL does not answer is cancelled when
    the grace ends (jobs it claimed without the worker learning of it wait for their lease)."""
    await finish_or_cancel([claiming], max(UNWIND_SECONDS, clock.grace_left()), "the claim")


async def end_runners(runners: list[asyncio.Task], clock: StopClock) -> None:
    """Wait for the job runners told to stop to record that; cancel those still waiting."""
    await finish_or_cancel(runners, clock.writes_left(), "recording the stopped jobs")


async def stop_services(
    services: list[asyncio.Task], batchers: dict[str, Batcher], clock: StopClock
) -> None:
    """Cancel the services, except the batchers (named as their tasks): those first write what
    they hold (``Batcher.stop``), within the stop's time for writes."""
    for service in services:
        if service.get_name() not in batchers:
            service.cancel()
    for batcher in batchers.values():
        batcher.stop()
    await finish_or_cancel(
        services, clock.writes_left(), "writing the last completions and task signals"
    )


async def close_within(close: Coroutine[Any, Any, None]) -> None:
    """Close a connection, giving up after ``UNWIND_SECONDS``."""
    await finish_or_cancel([asyncio.ensure_future(close)], UNWIND_SECONDS, "closing a connection")


async def finish_or_cancel(tasks: list[asyncio.Task], seconds: float, what: str) -> None:
    """Wait ``seconds`` for ``tasks``; cancel those left (say so once) and let them unwind."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=seconds)
    if not pending:
        return
    logger.warning(
        "Stopping: gave up %s after %.1fs (PostgreSQL does not answer?); %d task(s) cancelled.",
        what,
        seconds,
        len(pending),
    )
    await _cancel(pending)


async def _cancel(pending: set[asyncio.Task]) -> None:
    """Cancel the tasks and let them unwind, within ``UNWIND_SECONDS`` twice at most."""
    for _ in range(2):
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=UNWIND_SECONDS)
        if not pending:
            return
