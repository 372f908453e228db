"""Where the fairness probe starts (runtime/fairness.py): at the head first, then at its last
find, and at the head again every ``reset_seconds``."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from django_leasequeue.runtime.fairness import OldestDueBound
from django_leasequeue.sql.records import DueJob

NOON = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def test_the_first_probe_starts_at_the_head_and_the_next_at_its_find():
    bound = OldestDueBound(reset_seconds=60)
    assert bound.current(100.0) is None
    bound.found(DueJob(uuid4(), NOON))
    assert bound.current(101.0) == NOON
    bound.found(DueJob(uuid4(), NOON + timedelta(seconds=5)))
    assert bound.current(102.0) == NOON + timedelta(seconds=5)


def test_nothing_found_keeps_the_bound():
    bound = OldestDueBound(reset_seconds=60)
    bound.current(100.0)
    bound.found(DueJob(uuid4(), NOON))
    bound.found(None)
    assert bound.current(101.0) == NOON


def test_every_reset_seconds_the_probe_starts_at_the_head_again():
    bound = OldestDueBound(reset_seconds=60)
    bound.current(100.0)
    bound.found(DueJob(uuid4(), NOON))
    assert bound.current(159.9) == NOON
    assert bound.current(160.0) is None
    bound.found(DueJob(uuid4(), NOON - timedelta(hours=1)))  # a job due before the old bound
    assert bound.current(161.0) == NOON - timedelta(hours=1)
    assert bound.current(220.0) is None
