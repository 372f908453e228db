"""The threads that run sync tasks, with one wake-up of the event loop per batch of results.

``ThreadPoolExecutor`` through ``run_in_executor`` costs a future pair and a write to the
loop's self-pipe for every call, and each of those writes wakes the loop on its own: for a
short sync job that hop is the largest cost the worker adds. Here a job's result is queued
and the loop is woken only when no wake-up is already pending, so results that finish while
the loop is busy are collected together.
"""

import asyncio
import collections
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

_Call = tuple[contextvars.Context, Callable[[], Any], asyncio.Future]
_STOP = None


class JobThreads:
    """``count`` daemon threads running calls for one event loop."""

    def __init__(self, count: int, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._results: collections.deque[tuple[asyncio.Future, bool, Any]] = collections.deque()
        self._wake_pending = False
        self._loop: asyncio.AbstractEventLoop  # the first run() sets it, then starts the threads
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}-{n}", daemon=True)
            for n in range(count)
        ]
        self._started = False

    def run(self, call: Callable[[], Any]) -> asyncio.Future:
        """Run ``call()`` in a thread, in a copy of the caller's context (a job's, for its
        logs); the future gets its value or exception."""
        if not self._started:
            self._loop = asyncio.get_running_loop()
            for thread in self._threads:
                thread.start()
            self._started = True
        future = self._loop.create_future()
        self._calls.put((contextvars.copy_context(), call, future))
        return future

    def shutdown(self) -> None:
        """Ask idle threads to exit; a thread still running a call is not waited for."""
        for _ in self._threads:
            self._calls.put(_STOP)

    def _serve(self) -> None:
        get, results = self._calls.get, self._results
        while (item := get()) is not _STOP:
            context, call, future = item
            try:
                outcome = (future, True, context.run(call))
            except BaseException as exc:  # handed to the awaiting coroutine, never lost here
                outcome = (future, False, exc)
            results.append(outcome)
            if not self._wake_pending:
                self._wake_pending = True
                self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        """On the loop: hand every finished call's outcome to its future."""
        self._wake_pending = False  # before draining: a result added after this wakes again
        while self._results:
            future, ok, value = self._results.popleft()
            if future.cancelled():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
