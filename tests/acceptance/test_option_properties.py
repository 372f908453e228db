"""Property tests of the one rule for durations and keys (issue 35): any value a user can pass
as a duration or return as a unique key is either refused where it is given, with an error
naming the option, or stored and read back unchanged; through a real worker, no snooze leaves a
job running or harms the worker.

The example budget is fixed for CI; ``LEASEQUEUE_PROPERTY_EXAMPLES=500`` runs a longer search.
"""

import math
import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_leasequeue import InvalidDuration, InvalidTaskArguments
from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks import control as control_tasks
from tests.support.tasks.basic import add
from tests.support.tasks.values import python_literal

pytestmark = [pytest.mark.django_db(transaction=True)]

EXAMPLES = int(os.environ.get("LEASEQUEUE_PROPERTY_EXAMPLES", "25"))
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="CI" in os.environ,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# The last moment the rule lets a duration reach, written out apart from the code under test.
LAST_DAY = datetime(9999, 12, 30, tzinfo=UTC)
YEAR = 365.25 * 86400

_seconds = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([0, 0.001, 1, YEAR * 7000, YEAR * 7900, YEAR * 8100, 10**15, 1e300, 10**400]),
)
_timedeltas = st.timedeltas() | st.sampled_from([timedelta.max, timedelta.min, timedelta(0)])
durations = _seconds | _timedeltas | st.sampled_from([True, False, None, "5", [1], b"1"])


def _seconds_of(value):
    """The rule, written out: seconds, or None for a value that is no duration at all."""
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _holdable(value, *, zero_allowed=False):
    seconds = _seconds_of(value)
    if seconds is None or not math.isfinite(seconds):
        return False
    if seconds < 0 or (seconds == 0 and not zero_allowed):
        return False
    # A margin of an hour either side of the boundary: the test cannot know the exact moment.
    room = (LAST_DAY - datetime.now(UTC)).total_seconds()
    assert abs(seconds - room) > 3600, "too close to the boundary to decide"
    return seconds < room


def _near_the_boundary(value):
    seconds = _seconds_of(value)
    if seconds is None or not math.isfinite(seconds):
        return False
    return abs(seconds - (LAST_DAY - datetime.now(UTC)).total_seconds()) <= 3600


@PROPERTY_SETTINGS
@given(option=st.sampled_from(["expires_after", "unique_for"]), value=durations)
def test_a_period_is_stored_exactly_or_refused_naming_its_option(option, value):
    if value is None or _near_the_boundary(value):
        return  # None means "not given"
    Job.objects.all().delete()
    keyed = {"unique_key": "k"} if option == "unique_for" else {}
    if not _holdable(value):
        with pytest.raises(InvalidDuration, match=rf"^{option} "):
            add.using(**keyed, **{option: value}).enqueue(1, 2)
        assert not Job.objects.exists()
        return
    result = add.using(**keyed, **{option: value}).enqueue(1, 2)
    job = Job.objects.get(pk=result.id)
    stored = (job.expires_at - job.run_after) if option == "expires_after" else None
    if stored is not None:
        assert abs(stored.total_seconds() - _seconds_of(value)) < 1e-3 * max(
            1, _seconds_of(value) / 1e9
        )
    else:
        held = (job.unique_until - job.enqueued_at).total_seconds()
        assert abs(held - _seconds_of(value)) < 1  # now() of the statement, a moment earlier


@PROPERTY_SETTINGS
@given(
    returned=st.one_of(
        st.text(max_size=300),
        st.none(),
        st.integers(),
        st.floats(allow_nan=False),
        st.lists(st.text(max_size=3), max_size=2),
        st.booleans(),
    )
)
def test_a_unique_key_is_stored_exactly_or_refused_naming_unique_key(returned):
    Job.objects.all().delete()
    storable = (
        isinstance(returned, str)
        and len(returned) <= 255
        and "\x00" not in returned
        and not any(0xD800 <= ord(c) <= 0xDFFF for c in returned)
    )
    if not storable:
        with pytest.raises(InvalidTaskArguments, match="unique"):
            control_tasks.keyed_by_what_it_is_given.enqueue("x", returned=returned)
        assert not Job.objects.exists()
        return
    result = control_tasks.keyed_by_what_it_is_given.enqueue("x", returned=returned)
    assert Job.objects.get(pk=result.id).unique_key == returned
    again = control_tasks.keyed_by_what_it_is_given.enqueue("y", returned=returned)
    assert again.id == result.id  # the same task's key: the same job back


@pytest.fixture
def worker(start_workers):
    workers = start_workers("--concurrency", "10", options={"lease_seconds": 30})
    [child] = workers.wait_for_children(1)
    yield workers, child


_snoozes = st.one_of(
    st.sampled_from([0, 0.01, 10**15, 1e300, float("inf"), -1, 1e12, "soon"]),
    st.floats(min_value=1e9, max_value=1e12),
    st.sampled_from([[1], [365 * 9000], [999_999_999]]),  # timedeltas, in days
)


@PROPERTY_SETTINGS
@given(seconds=_snoozes)
def test_no_snooze_leaves_a_job_running_or_harms_the_worker(worker, seconds):
    workers, child = worker
    job_id = control_tasks.snoozes_for.enqueue(python_literal(seconds)).id
    innocent = add.enqueue(2, 3).id
    wait_until(
        lambda: (
            Job.objects.get(pk=job_id).status != "running"
            and Job.objects.get(pk=job_id).last_attempted_at is not None
            and Job.objects.get(pk=innocent).status == "succeeded"
        ),
        30,
        "the snoozing job to leave running",
    )
    job = Job.objects.get(pk=job_id)
    given_value = timedelta(days=seconds[0]) if isinstance(seconds, list) else seconds
    if isinstance(seconds, str) or not _holdable(given_value, zero_allowed=True):
        wait_until(lambda: Job.objects.get(pk=job_id).status == "failed", 30, "the attempt")
        job = Job.objects.get(pk=job_id)
        [error] = job.errors
        assert error["exception_class_path"] == "django_leasequeue.exceptions.InvalidDuration"
        assert "snooze" in error["message"]
    elif _seconds_of(given_value) < 5:
        wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "the wake")
        assert Job.objects.get(pk=job_id).result == "woke"
    else:
        assert job.status == "queued" and job.snoozes == 1
        assert job.run_after > datetime.now(UTC) + timedelta(seconds=_seconds_of(given_value) - 60)
    assert workers.children() == [child]
