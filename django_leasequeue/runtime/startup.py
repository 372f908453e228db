"""How a worker process tells the supervisor that it started, or why it could not.

A process that dies before it said "started" failed its start-up (an import error, bad
settings, PostgreSQL refusing its login): restarting it forever helps nobody. The child sends
its error text instead of logging it, so that the supervisor prints it once, however many
times it tries, and then gives up (see ``supervisor``).

The other half, ``spawn_without_main``, keeps a spawned child from running the parent's
``__main__`` script again: multiprocessing's spawn re-imports it in every child, so a
``manage.py`` without the ``if __name__ == "__main__":`` guard would run ``runworkers`` once
more in each worker process, which then fails to start, over and over.
"""

import contextlib
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection

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
