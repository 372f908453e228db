"""How a worker process tells the supervisor that it started, or why it could not.

A process that dies before it said "started" failed its start-up (an import error, bad
settings, PostgreSQL refusing its login): restarting it forever helps nobody. The child sends
its error text instead of logging it, so that the supervisor prints it once, however many
times it tries, and then gives up (see ``supervisor``).

The other half is how a child comes to be (``runworkers --start-method``). Forked (the default
on Linux), it finds Django set up and the worker's modules imported by the supervisor: it is
running in milliseconds instead of importing Django and setting it up again (about half a
second of CPU each). Spawned (the default elsewhere: macOS's system libraries are not safe to
fork without exec; or for a project whose settings create what cannot cross a fork),
``spawn_without_main`` keeps it from running the parent's ``__main__`` script again:
multiprocessing's spawn re-imports it in every child, so a ``manage.py`` without the
``if __name__ == "__main__":`` guard would run ``runworkers`` once more in each worker process,
which then fails to start, over and over.
"""

import contextlib
import multiprocessing
import signal
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, SpawnContext
from typing import Literal

from django.db import connections
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresWrapper

# The signals the supervisor handles itself, which a forked child must not handle its way.
_SUPERVISOR_SIGNALS = {signal.SIGTERM, signal.SIGINT}

# Exit status of a worker process that could not start (its error went to the supervisor).
STARTUP_FAILED = 4
# Exit status of a burst's worker process that gave up waiting for PostgreSQL (--max-wait).
GAVE_UP_WAITING = 5


class StartupReporter:
    """The child's end of the pipe: ``started()`` once start-up is over, else ``failed()``."""

    def __init__(self, conn: Connection | None) -> None:
        self._conn = conn
        self.done = False

    def started(self) -> None:
        if not self.done:
            self.done = True
            self._send(("started", ""))

    def failed(self, reason: str | None = None) -> None:
        """Send ``reason``, or else the exception being handled, formatted; print it if nobody
        listens."""
        text = reason or traceback.format_exc().rstrip()
        self.done = True
        if not self._send(("failed", text)):
            print(text, file=sys.stderr, flush=True)

    def _send(self, message: tuple[str, str]) -> bool:
        if self._conn is None:
            return False
        try:
            self._conn.send(message)
        except OSError:  # the supervisor is gone
            return False
        return True


@dataclass
class StartupState:
    """The supervisor's end: what a child said about its start-up."""

    conn: Connection
    started: bool = False
    error: str | None = None

    def read(self) -> None:
        """Take every message the child sent (call after it exited, or at any time)."""
        with contextlib.suppress(EOFError, OSError):
            while self.conn.poll():
                kind, text = self.conn.recv()
                if kind == "started":
                    self.started = True
                else:
                    self.error = text

    def close(self) -> None:
        self.conn.close()


@contextlib.contextmanager
def spawn_without_main() -> Iterator[None]:
    """While a child is spawned, let it re-import this module as its ``__main__`` instead of
    the parent's script (multiprocessing reads ``sys.modules["__main__"]`` to decide)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = sys.modules[__name__]
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def process_context(start_method: Literal["fork", "spawn"]) -> ForkContext | SpawnContext:
    """Where the supervisor makes its worker processes."""
    if start_method == "fork":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def starting_child(start_method: Literal["fork", "spawn"]) -> Iterator[None]:
    """Around the start of one worker process, in the supervisor.

    Forking: the supervisor's database connections and connection pools close first (a child
    that inherited one would share its sockets, and a pool's threads do not cross a fork), and
    its signals wait until the child is out (a SIGTERM reaching the child before
    ``become_worker`` would run the supervisor's handler there, which signals the other
    workers)."""
    if start_method == "spawn":
        with spawn_without_main():
            yield
        return
    _close_databases()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISOR_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def become_worker() -> None:
    """First thing in a worker process: SIGTERM stops it as any process (until its loop
    handles it), Ctrl-C is the supervisor's business (it reaches the whole process group), and
    the signals ``starting_child`` held back arrive now."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SUPERVISOR_SIGNALS)


def _close_databases() -> None:
    """Close every database connection of this process, and the pools of those that have one
    open (``OPTIONS["pool"]``: closing a connection only hands it back to its pool)."""
    for connection in connections.all():
        connection.close()
        if isinstance(connection, PostgresWrapper) and connection.alias in connection_pools():
            connection.close_pool()


def connection_pools() -> dict[str, object]:
    """The open pools of Django's PostgreSQL connections, by alias (Django 5.1+)."""
    return getattr(PostgresWrapper, "_connection_pools", {})
