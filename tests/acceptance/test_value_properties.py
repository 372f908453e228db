"""Property tests of the one rule for values (issue #20): generated values (every kind of
surrogate, NUL, control characters, emoji, huge integers, NaN and infinities, nesting around the
limit, sizes around the limit) either round-trip exactly or get the documented clear error, at
enqueue and through a real worker, and no other job or the worker is harmed.

The example budget is fixed for CI; ``LEASEQUEUE_PROPERTY_EXAMPLES=500`` runs a longer search.
"""

import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_leasequeue import InvalidTaskArguments
from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import add
from tests.support.tasks.values import python_literal, raises, reports, returns, saves_checkpoint

pytestmark = [pytest.mark.django_db(transaction=True)]

EXAMPLES = int(os.environ.get("LEASEQUEUE_PROPERTY_EXAMPLES", "25"))
MAX_BYTES = 1024 * 1024  # the default max_argument_bytes
MAX_NESTING = 100
UNSTORABLE = "django_leasequeue.exceptions.UnstorableValue"
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="CI" in os.environ,
    # One worker serves every example of a test: the fixture is meant to be shared.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

# What PostgreSQL or a reader trips on, mixed into ordinary text.
_TRICKY = [
    "\x00",
    "\ud800",
    "\udc80",
    "\udbff\udfff",
    "\ud83d\ude00",  # a surrogate pair as two code points: would come back as one emoji
    "😀",
    "\x01\x1f\x7f",
    "\u2028\u2029",
    "\ufeff",
    "\\u0000",  # the text of an escape, not a NUL
    "\\ud800",
    "e+5",
]
_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.lists(st.sampled_from(_TRICKY) | st.text(max_size=3), max_size=4).map("".join),
)
# Built when drawn: Hypothesis shows a strategy's elements, and Python cannot show 10**4300.
_integers = st.integers() | st.sampled_from(
    [lambda: 2**63, lambda: -(2**63) - 1, lambda: 10**4300 - 1, lambda: 10**4300]
).map(lambda build: build())
_floats = st.floats() | st.sampled_from([1e16, 1e23, 1.5e300, 1e308, 5e-324, 1e-5, -0.0])
_leaves = st.none() | st.booleans() | _integers | _floats | _text


def _nested(leaf: Any, depth: int, kind: type) -> Any:
    for _ in range(depth - 1):
        leaf = [leaf] if kind is list else {"k": leaf}
    return leaf


values = st.one_of(
    st.recursive(
        _leaves,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4)
        ),
        max_leaves=8,
    ),
    st.builds(_nested, _leaves, st.integers(98, 102), st.sampled_from([list, dict])),
    st.sampled_from([MAX_BYTES - 100, MAX_BYTES + 100]).map(lambda size: "x" * size),
)


def _storable(value: Any, depth: int = 1) -> bool:
    """The documented rule, written out independently of the code under test."""
    if isinstance(value, str):
        return "\x00" not in value and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) < 10**4300
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return depth <= MAX_NESTING and all(_storable(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return depth <= MAX_NESTING and all(
            isinstance(key, str) and _storable(key) and _storable(item, depth + 1)
            for key, item in value.items()
        )
    return False


def _json_size(value: Any) -> int:
    """Bytes of the stored JSON (ASCII, compact): only the size matters, so a float written
    out in full by the encoder may differ here by a few bytes; the sizes generated are far
    from the limit or consist of one string."""
    import json

    return len(json.dumps(value, separators=(",", ":")))


def _same(stored: Any, value: Any) -> bool:
    """Equal, and of the same JSON types all the way down (1.0 is not 1)."""
    if isinstance(value, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(value)
            and all(_same(a, b) for a, b in zip(stored, value, strict=True))
        )
    if isinstance(value, dict):
        return (
            isinstance(stored, dict)
            and stored.keys() == value.keys()
            and all(_same(stored[key], value[key]) for key in value)
        )
    return type(stored) is type(value) and stored == value


@PROPERTY_SETTINGS
@given(value=values)
def test_a_value_enqueued_round_trips_exactly_or_is_refused_clearly(value):
    Job.objects.all().delete()
    # An argument sits in the list of arguments: one level deeper.
    if _storable(value, depth=2) and _json_size([value]) <= MAX_BYTES:
        result = returns.enqueue(value)
        assert _same(result.args[0], value)
        assert _same(Job.objects.get(pk=result.id).args[0], value)
    else:
        with pytest.raises(InvalidTaskArguments, match=r"args\[0\]|over the limit"):
            returns.enqueue(value)
        assert not Job.objects.exists()


@pytest.fixture
def worker(start_workers):
    workers = start_workers("--concurrency", "10", options={"lease_seconds": 30})
    [child] = workers.wait_for_children(1)
    yield workers, child


@PROPERTY_SETTINGS
@given(value=values)
def test_a_value_a_worker_stores_round_trips_exactly_or_fails_the_attempt_clearly(worker, value):
    workers, child = worker
    literal = python_literal(value)
    jobs = {
        "return": returns.enqueue(literal).id,
        "checkpoint": saves_checkpoint.enqueue(literal).id,
    }
    if isinstance(value, str):
        jobs["progress"] = reports.enqueue(literal).id
        jobs["exception"] = raises.enqueue(literal).id
    innocent = add.enqueue(2, 3).id
    ids = [*jobs.values(), innocent]
    wait_until(
        lambda: not Job.objects.filter(pk__in=ids, status__in=["queued", "retrying", "running"]),
        30,
        "the jobs to end",
    )
    stored = {name: Job.objects.get(pk=job_id) for name, job_id in jobs.items()}
    storable = _storable(value)
    fits = storable and _json_size(value) <= MAX_BYTES

    for name, job in stored.items():
        if name == "exception":
            continue
        if storable and (fits or name == "progress"):  # a message has no size limit
            assert (job.status, job.attempt) == ("succeeded", 1), (name, job.errors)
        else:
            assert (job.status, job.attempt) == ("failed", 1), name  # at once, no retry
            [error] = job.errors
            assert error["exception_class_path"] == UNSTORABLE, (name, error)
            assert error["message"].startswith(f"{'return value' if name == 'return' else name}:")
    if storable and fits:
        assert _same(stored["return"].result, value)
        assert _same(stored["checkpoint"].checkpoint, value)
    if "progress" in stored and storable:
        assert stored["progress"].progress["message"] == value
    if "exception" in stored:
        job = stored["exception"]
        assert (job.status, job.attempt) == ("failed", 1)
        message = job.errors[0]["message"]
        assert _storable(message)  # kept, escaped where it had to be
        if storable:
            assert message == (value or "ValueError")

    job = Job.objects.get(pk=innocent)
    assert (job.status, job.attempt, job.result) == ("succeeded", 1, 5)
    assert workers.children() == [child]
