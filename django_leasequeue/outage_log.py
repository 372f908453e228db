"""How an outage of something the app depends on (PostgreSQL, Redis, the channel layer) reaches
the log: one line at its first failure, a summary with a count at growing intervals while it
lasts (after 1 min, 5 min, 15 min, 1 h, then hourly), and one line when it answers again. An
outage of hours leaves a handful of lines, however often the callers retry.

Callers report each attempt: ``failed`` (with what went wrong) or ``succeeded``. Thread-safe:
the Redis calls of one process come from several threads.
"""

import logging
import threading
import time
from collections.abc import Callable

from django_leasequeue.human_duration import duration

# Seconds from an outage's first failure to each summary; hourly after the last.
SUMMARY_AFTER = (60.0, 300.0, 900.0, 3600.0)
_HOURLY = 3600.0


class OutageLog:
    """The outages of one dependency, ``what`` ("PostgreSQL", "Redis"), as they reach ``logger``;
    ``meanwhile`` says what the caller does until it answers ("retrying")."""

    def __init__(
        self,
        what: str,
        logger: logging.Logger,
        *,
        meanwhile: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.logger, self.meanwhile = what, logger, meanwhile
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0
        self._summaries = 0

    def failed(self, detail: object, *, exc_info: BaseException | None = None) -> None:
        """Count a failed attempt: the first of an outage is logged (with ``exc_info``'s
        traceback, when given: an unexpected error), then only the summaries that are due."""
        text = " ".join(str(detail).split())  # psycopg's errors span lines
        with self._lock:
            now = self._clock()
            self._failures += 1
            if self._since is None:
                self._since, self._summaries = now, 0
                self.logger.warning(
                    "%s: %s; %s (a summary follows at growing intervals while this lasts).",
                    self.what,
                    text,
                    self.meanwhile,
                    exc_info=exc_info,
                )
                return
            lasted = now - self._since
            if lasted >= self._summary_due():
                while lasted >= self._summary_due():  # the next one after now, however late
                    self._summaries += 1
                self.logger.warning(
                    "%s: still failing after %s, %d failed attempt(s) (the last: %s); %s.",
                    self.what,
                    duration(lasted),
                    self._failures,
                    text,
                    self.meanwhile,
                )

    def succeeded(self) -> None:
        """An attempt went through: the end of the outage, if there was one (logged once)."""
        if self._since is None:  # the common case, without taking the lock
            return
        with self._lock:
            if self._since is None:
                return
            self.logger.warning(
                "%s answers again, after %s and %d failed attempt(s).",
                self.what,
                duration(self._clock() - self._since),
                self._failures,
            )
            self._since, self._failures = None, 0

    def down_for(self) -> float:
        """How long the current outage has lasted (0 when there is none)."""
        since = self._since
        return 0.0 if since is None else self._clock() - since

    def _summary_due(self) -> float:
        if self._summaries < len(SUMMARY_AFTER):
            return SUMMARY_AFTER[self._summaries]
        return SUMMARY_AFTER[-1] + _HOURLY * (self._summaries - len(SUMMARY_AFTER) + 1)
