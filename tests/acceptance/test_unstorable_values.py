"""A value PostgreSQL cannot store fails only the attempt that made it, at once and saying why;
the worker stays up and its other jobs (flow-claimed ones included) end as they would have
(issue #20, against real runworkers processes)."""

from datetime import timedelta

import pytest

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import add
from tests.support.tasks.values import (
    asaves_checkpoint,
    limited_sleep,
    python_literal,
    raises,
    reports,
    returns,
    saves_checkpoint,
    swallows_refused_checkpoint,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

UNSTORABLE = "django_leasequeue.exceptions.UnstorableValue"
# Far longer than the tests wait: an outcome must never wait for the lease to run out.
LONG_LEASE = {"lease_seconds": 60, "heartbeat_seconds": 0.5}
LEASE = timedelta(seconds=LONG_LEASE["lease_seconds"])


def _finished(ids) -> bool:
    return not Job.objects.filter(pk__in=ids, status__in=["queued", "retrying", "running"]).exists()


def test_each_unstorable_value_fails_its_own_attempt_at_once_and_harms_nothing_else(
    start_workers,
):
    limited = [limited_sleep.enqueue(0.3).id for _ in range(6)]
    bad = {
        "return": returns.enqueue(repr("bad \udc80 value")).id,
        "nested return": returns.enqueue(repr({"items": ["ok", "x\x00"]})).id,
        "checkpoint": saves_checkpoint.enqueue(repr({"x": "\udc80"})).id,
        "async checkpoint": asaves_checkpoint.enqueue(python_literal([1, float("nan")])).id,
        "swallowed checkpoint": swallows_refused_checkpoint.enqueue(repr(["\ud800"])).id,
        "progress": reports.enqueue(repr("nul \x00 here")).id,
    }
    innocent = [add.enqueue(i, 1).id for i in range(20)]
    raised = raises.enqueue(repr("\udc80 in a message")).id
    workers = start_workers("--queues", "*", "--concurrency", "10", options=LONG_LEASE)
    [child] = workers.wait_for_children(1)

    everything = [*limited, *bad.values(), *innocent, raised]
    wait_until(lambda: _finished(everything), 30, "every job to end")

    expected = {
        "return": "return value: lone surrogate U+DC80 at character 4",
        "nested return": "return value: NUL character (\\x00) at ['items'][1], character 1",
        "checkpoint": "checkpoint: lone surrogate U+DC80 at ['x'], character 0",
        "async checkpoint": "checkpoint: nan (JSON has no NaN or infinity) at [1]",
        "swallowed checkpoint": "checkpoint: lone surrogate U+D800 at [0], character 0",
        "progress": "progress: the message has a NUL character (\\x00) at character 4",
    }
    for name, job_id in bad.items():
        job = Job.objects.get(pk=job_id)
        assert (job.status, job.attempt) == ("failed", 1), name  # no retry
        [error] = job.errors
        assert error["exception_class_path"] == UNSTORABLE, name
        assert error["message"] == expected[name], name
    assert Job.objects.get(pk=bad["checkpoint"]).checkpoint is None  # nothing was written

    # The task's own error, its unstorable character kept as an escape.
    job = Job.objects.get(pk=raised)
    assert job.status == "failed"
    assert job.errors[0]["message"] == "\\udc80 in a message"
    assert "ValueError: \\udc80 in a message" in job.errors[0]["traceback"]

    for job in Job.objects.filter(pk__in=[*innocent, *limited]):
        assert (job.status, job.attempt) == ("succeeded", 1)
    assert workers.children() == [child]  # the worker process never died
    # Nobody waited for a lease to expire: each job ended well within its claim's lease.
    for job in Job.objects.filter(pk__in=everything):
        assert job.finished_at - job.last_attempted_at < LEASE, job.task_path
    log = workers.log()
    assert "could not record its outcome" not in log
    assert "InFailedSqlTransaction" not in log


def test_an_unstorable_argument_is_refused_at_enqueue_and_nothing_is_written():
    from django_leasequeue import InvalidTaskArguments

    with pytest.raises(InvalidTaskArguments, match=r"lone surrogate U\+D800 at args\[0\]"):
        add.enqueue("\ud800", 1)
    assert not Job.objects.exists()
