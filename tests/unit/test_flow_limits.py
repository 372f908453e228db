"""Parsing of flow-control limits, and the admission rule a flow claim applies."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_leasequeue import task
from django_leasequeue.conf import BackendConfig
from django_leasequeue.exceptions import LimitError
from django_leasequeue.flow.admission import admit, round_robin
from django_leasequeue.flow.limits import Rate, TaskLimits
from django_leasequeue.sql.records import FlowCandidate, FlowUsage
from django_leasequeue.tasks_framework import InvalidTask

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "count", "period"),
    [("10/s", 10, 1), ("30/m", 30, 60), ("100/h", 100, 3600), ("5/10s", 5, 10), ("2 / min", 2, 60)],
)
def test_rates_parse(text, count, period):
    assert Rate.parse(text) == Rate(count, period)


@pytest.mark.parametrize("text", ["10", "0/s", "x/s", "10/d", 10, None, "10/0s"])
def test_a_rate_that_is_not_one_says_how_to_write_it(text):
    with pytest.raises(LimitError, match=r"e\.g\. '10/s'"):
        Rate.parse(text)


def test_queue_limits_are_parsed_per_queue():
    config = BackendConfig.from_options(
        {"queue_limits": {"llm": {"concurrency": 2, "rate_limit": "30/m", "max_pending": 1000}}},
        {"llm", "default"},
    )
    limit = config.queue_limits["llm"]
    assert (limit.concurrency, limit.rate_limit, limit.max_pending) == (2, Rate(30, 60), 1000)


@pytest.mark.parametrize(
    ("queue_limits", "message"),
    [
        ({"nope": {"concurrency": 1}}, r"names queue 'nope', which is not in QUEUES"),
        ({"llm": {"concurrency": 0}}, r"queue_limits\['llm'\]: concurrency must be"),
        ({"llm": {"rate_limit": "fast"}}, r"queue_limits\['llm'\]: rate_limit 'fast'"),
        ({"llm": {"max_pending": "many"}}, r"queue_limits\['llm'\]: max_pending must be"),
        ({"llm": {"burst": 3}}, r"queue_limits\['llm'\] has unknown keys \['burst'\]"),
        ({"llm": {}}, r"queue_limits\['llm'\] must be a dict"),
        (["llm"], "queue_limits must map queue names"),
    ],
)
def test_bad_queue_limits_are_refused_naming_the_queue(queue_limits, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        BackendConfig.from_options({"queue_limits": queue_limits}, {"llm", "default"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency must be a whole number"),
        ({"concurrency": True}, "concurrency must be a whole number"),
        ({"rate_limit": "quick"}, "rate_limit 'quick' is not a rate"),
        ({"max_pending": -1}, "max_pending must be a whole number"),
        ({"concurrency_key": lambda: "k"}, "concurrency_key is given without concurrency"),
        ({"concurrency": 1, "concurrency_key": "user"}, "concurrency_key must be a callable"),
        ({"max_pending": 1, "rate_limit_key": lambda: "k"}, "rate_limit_key is given without"),
    ],
)
def test_a_bad_task_limit_fails_when_the_task_is_declared(options, message):
    with pytest.raises(InvalidTask, match=message):
        task(**options)(_module_level)


def test_keys_are_namespaced_by_task_and_checked():
    limits = TaskLimits.of(
        task(concurrency=1, concurrency_key=lambda user_id: f"user:{user_id}", rate_limit="2/s")(
            _module_level
        )
    )
    job = limits.job_limits("app.tasks.call", None, [7], {})
    assert job.concurrency_key == "task:app.tasks.call:user:7"
    assert job.flow_key == job.concurrency_key
    assert job.limits == [
        {"key": "task:app.tasks.call:user:7", "concurrency": 1},
        {"key": "task:app.tasks.call", "rate": 2, "per": 1},
    ]
    with pytest.raises(LimitError, match="longer than 255"):
        limits.job_limits("app.tasks.call", None, ["x" * 300], {})


def _module_level(user_id):
    return user_id


def _candidate(flow_key, *limits):
    return FlowCandidate(uuid.uuid4(), flow_key, "default", list(limits))


def test_round_robin_takes_one_of_each_partition_in_turn():
    a1, a2, a3 = (_candidate("a") for _ in range(3))
    b1 = _candidate("b")
    c1, c2 = _candidate("c"), _candidate("c")
    assert round_robin([a1, a2, a3, b1, c1, c2]) == [a1, b1, c1, a2, c2, a3]


def test_a_concurrency_cap_admits_only_the_room_left():
    cap = {"key": "task:t", "concurrency": 2}
    jobs = [_candidate("task:t", cap) for _ in range(5)]
    usage = FlowUsage({"task:t": 1}, {}, {}, NOW)
    admission = admit(jobs, frozenset({"task:t"}), usage, free=10)
    assert admission.ids == [jobs[0].id]
    assert admission.next_start is None  # held by a cap: no known time


def test_a_queue_cap_counts_the_whole_queue():
    cap = {"key": "queue:llm", "queue": "llm", "concurrency": 3}
    jobs = [_candidate(f"task:t{i}", cap) for i in range(5)]
    usage = FlowUsage({}, {"llm": 1}, {}, NOW)
    admission = admit(jobs, frozenset({"queue:llm"}), usage, free=10)
    assert len(admission.ids) == 2


def test_candidates_whose_limits_another_claim_holds_are_skipped():
    mine = _candidate("task:a", {"key": "task:a", "concurrency": 5})
    theirs = _candidate("task:b", {"key": "task:b", "concurrency": 5})
    usage = FlowUsage({"task:a": 0}, {}, {}, NOW)
    assert admit([mine, theirs], frozenset({"task:a"}), usage, free=10).ids == [mine.id]


def test_gcra_never_starts_more_than_count_plus_one_in_any_window_of_one_period():
    """Claims every 10 ms for 10 s against 10/s: the starts, per sliding one-second window."""
    limit = {"key": "task:r", "rate": 10, "per": 1}
    tat = None
    starts = []
    for step in range(1000):
        now = NOW + timedelta(milliseconds=10 * step)
        usage = FlowUsage({}, {}, {"task:r": tat}, now)
        admission = admit([_candidate("task:r", limit)], frozenset({"task:r"}), usage, free=5)
        if admission.ids:
            starts.append(now)
            tat = admission.tats["task:r"]
        else:
            assert now < admission.next_start <= now + timedelta(seconds=0.1)
    most = max(
        sum(1 for other in starts if start <= other <= start + timedelta(seconds=1))
        for start in starts
    )
    assert most <= 11
    assert 99 <= len(starts) <= 101  # 10/s over 10 s
