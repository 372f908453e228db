"""Where a worker's poll claim (``claim_batch``) starts reading.

A poll walks the claim index in claim order. While a snapshot is held (a report, a
``pg_dump``, a forgotten ``BEGIN``), every job claimed since leaves an entry at the head of that
index which no scan can mark dead, and a walk from the head visits the row behind each: over a
50,000-job backlog drained by polls alone (a ``--burst``, or workers while Redis is down), the
drain fell from 1,282 to 721 jobs/s by its last tenth. So after a full poll the next one starts
at the position of the last job it took: every due job before it at that priority was taken.

A job that appears before that position later (enqueued with a past ``run_after``, or committed
by a transaction older than the poll) is found by a poll from the head: the claimer completes a
poll that came back short from the head at once, and every ``reset_seconds`` (the fairness
probe's interval, ``runtime/fairness.py``) a poll starts there.
"""

from collections.abc import Sequence

from django_leasequeue.runtime.fairness import RESET_SECONDS
from django_leasequeue.sql.records import ClaimedJob, ClaimPosition


class PollBound:
    """The ``after`` of a worker's next poll claim."""

    def __init__(self, reset_seconds: float = RESET_SECONDS) -> None:
        self.reset_seconds = reset_seconds
        self._after: ClaimPosition | None = None
        self._reset_at = 0.0  # the first poll starts at the head

    def current(self, now: float) -> ClaimPosition | None:
        """The position a poll at ``now`` (``time.monotonic()``) starts after; None: the head."""
        if now >= self._reset_at:
            self._after = None
            self._reset_at = now + self.reset_seconds
        return self._after

    def claimed(self, jobs: Sequence[ClaimedJob], asked: int) -> None:
        """What a poll took of the ``asked``: after a full one, the next starts at its last
        job in claim order; after a short one, at the head."""
        if len(jobs) < asked or not jobs:
            self._after = None
            return
        last = max(jobs, key=lambda job: (-job.priority, job.run_after, job.lease.job_id))
        self._after = ClaimPosition(last.priority, last.run_after, last.lease.job_id)
