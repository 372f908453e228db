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

from django_leasequeue.runtime.fairness import ResettingBound
from django_leasequeue.sql.records import ClaimedJob, ClaimPosition


class PollBound(ResettingBound[ClaimPosition]):
    """The ``after`` of a worker's next poll claim."""

    def claimed(self, jobs: Sequence[ClaimedJob], asked: int) -> None:
        """What a poll took of the ``asked``: after a full one, the next starts at its last
        job in claim order; after a short one, at the head."""
        if len(jobs) < asked or not jobs:
            self._bound = None
            return
        last = max(jobs, key=lambda job: (-job.priority, job.run_after, job.lease.job_id))
        self._bound = ClaimPosition(last.priority, last.run_after, last.lease.job_id)
