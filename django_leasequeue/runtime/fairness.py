"""Where a worker's fairness probe (``oldest_due_job``) starts reading.

While claims come back full, every ``oldest_first_seconds`` a worker claims the oldest due job
ahead of priority order. From the head of the claim index that probe visits the row of every
entry it passes, and while a snapshot is held (a report, a ``pg_dump``, a forgotten ``BEGIN``)
each job claimed since leaves an entry there that no scan can mark dead: over the 10-minute
steady run of ``bench/backlog.py`` the probe was running in 15 of 40 samples by the 7th minute,
walking hundreds of thousands of them. So it starts at the run_after of its last find instead.
A job due before that which appears later (enqueued with a past ``run_after``, or committed
after a probe that could not see it yet) is found by the probe from the head, once every
``reset_seconds``.
"""

from datetime import datetime

from django_leasequeue.sql.records import DueJob

# How often the probe (and the poll claim, runtime/poll_bound.py) reads from the head of the
# claim index again.
RESET_SECONDS = 60.0


class ResettingBound[T]:
    """Where a walk of the claim index starts: a bound its walks set, read as None (the head)
    at the first walk and again once every ``reset_seconds``."""

    def __init__(self, reset_seconds: float = RESET_SECONDS) -> None:
        self.reset_seconds = reset_seconds
        self._bound: T | None = None
        self._reset_at = 0.0  # the first walk starts at the head

    def current(self, now: float) -> T | None:
        """The bound for a walk at ``now`` (``time.monotonic()``); ``None``: from the head."""
        if now >= self._reset_at:
            self._bound = None
            self._reset_at = now + self.reset_seconds
        return self._bound


class OldestDueBound(ResettingBound[datetime]):
    """The ``not_before`` of a worker's next fairness probe."""

    def found(self, job: DueJob | None) -> None:
        """What the probe found: the next one starts at its run_after. Nothing found keeps the
        bound: a job enqueued since became due after it."""
        if job is not None:
            self._bound = job.run_after
