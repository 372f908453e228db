"""Where the poll claim starts (runtime/poll_bound.py): at the head first, then at the last job
of a full poll in claim order, at the head after a short poll and every ``reset_seconds``."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from django_leasequeue.runtime.poll_bound import PollBound
from django_leasequeue.sql.records import ClaimedJob, ClaimPosition, Lease
from tests.support.helpers import claimed_job

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _job(priority: int, run_after: datetime, id_: int) -> ClaimedJob:
    return claimed_job(lease=Lease(UUID(int=id_), 1), priority=priority, run_after=run_after)


def test_after_a_full_poll_the_next_starts_at_its_last_job_in_claim_order():
    bound = PollBound(reset_seconds=60)
    assert bound.current(100.0) is None
    later = NOON + timedelta(seconds=1)
    # The order rows come back in is not claim order: highest priority, then run_after, id.
    bound.claimed([_job(0, NOON, 1), _job(5, later, 9), _job(0, NOON, 3), _job(5, NOON, 7)], 4)
    assert bound.current(101.0) == ClaimPosition(0, NOON, UUID(int=3))


def test_a_short_poll_sends_the_next_to_the_head():
    bound = PollBound(reset_seconds=60)
    bound.current(100.0)
    bound.claimed([_job(0, NOON, 1), _job(0, NOON, 2)], 2)
    assert bound.current(101.0) is not None
    bound.claimed([_job(0, NOON, 3)], 2)
    assert bound.current(102.0) is None
    bound.claimed([], 2)
    assert bound.current(103.0) is None


def test_every_reset_seconds_a_poll_starts_at_the_head_again():
    bound = PollBound(reset_seconds=60)
    bound.current(100.0)
    bound.claimed([_job(0, NOON, 1)], 1)
    assert bound.current(159.9) == ClaimPosition(0, NOON, UUID(int=1))
    assert bound.current(160.0) is None
    bound.claimed([_job(0, NOON, 2)], 1)
    assert bound.current(161.0) == ClaimPosition(0, NOON, UUID(int=2))
    assert bound.current(220.0) is None
