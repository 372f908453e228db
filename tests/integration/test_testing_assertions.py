"""``enqueued_jobs``, ``assert_enqueued`` and ``refute_enqueued``: what a test's code enqueued,
read from the job table in the test's transaction (or, with ``within=``, committed meanwhile by
another thread)."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from django_leasequeue import Workflow
from django_leasequeue.tasks_framework import TaskResult, TaskResultStatus
from django_leasequeue.testing import (
    assert_enqueued,
    drain,
    enqueued_jobs,
    refute_enqueued,
)
from tests.support.tasks import testing as tasks

pytestmark = pytest.mark.django_db


def test_enqueued_jobs_are_the_waiting_ones_of_a_task_oldest_first_as_task_results():
    first = tasks.send_welcome.enqueue(1)
    later = tasks.send_welcome.using(run_after=timezone.now() + timedelta(days=1)).enqueue(2)
    tasks.urgent.enqueue(3)
    listed = enqueued_jobs(tasks.send_welcome)
    assert [result.id for result in listed] == [first.id, later.id]
    assert all(isinstance(result, TaskResult) for result in listed)
    assert [result.args for result in listed] == [[1], [2]]
    assert {result.status for result in listed} == {TaskResultStatus.READY}
    assert listed[0].task.func is tasks.send_welcome.func
    assert len(enqueued_jobs()) == 3
    assert [result.args for result in enqueued_jobs(queue="high")] == [[3]]
    assert enqueued_jobs(tasks.send_welcome, queue="high") == []


def test_started_or_finished_jobs_are_not_enqueued_but_retrying_ones_and_waiting_steps_are():
    tasks.send_welcome.enqueue(1)
    retried = tasks.fails.enqueue("x")
    drain()
    assert enqueued_jobs(tasks.send_welcome) == []
    assert [result.id for result in enqueued_jobs(tasks.fails)] == [retried.id]
    workflow = Workflow("two steps")
    parent = workflow.add(tasks.returns, args=[1])
    workflow.add(tasks.noop, after=[parent])
    workflow.enqueue()
    assert len(enqueued_jobs(tasks.noop)) == 1  # waiting for its parent


def test_assert_enqueued_matches_args_kwargs_queue_and_priority():
    tasks.send_welcome.enqueue(7, locale="fr")
    tasks.urgent.enqueue(3)
    assert_enqueued(tasks.send_welcome)
    assert_enqueued(tasks.send_welcome, args=[7])
    assert_enqueued(tasks.send_welcome, args=(7,))  # a tuple equals the stored list
    assert_enqueued(tasks.send_welcome, kwargs={"locale": "fr"})
    assert_enqueued(tasks.send_welcome, kwargs={})  # a subset: no item, any kwargs
    assert_enqueued(tasks.urgent, queue="high", priority=7, args=[3], count=1)
    for wrong in (
        {"args": [8]},
        {"args": []},
        {"kwargs": {"locale": "de"}},
        {"kwargs": {"other": 1}},
        {"queue": "high"},
        {"priority": 1},
    ):
        with pytest.raises(AssertionError):
            assert_enqueued(tasks.send_welcome, **wrong)


def test_args_compare_as_stored_through_json():
    tasks.returns.enqueue({"pair": (1, 2)})
    assert_enqueued(tasks.returns, args=[{"pair": [1, 2]}])
    assert_enqueued(tasks.returns, args=[{"pair": (1, 2)}])


def test_count_is_exact():
    for _ in range(2):
        tasks.send_welcome.enqueue(1)
    tasks.send_welcome.enqueue(2)
    assert_enqueued(tasks.send_welcome, args=[1], count=2)
    assert_enqueued(tasks.send_welcome, count=3)
    with pytest.raises(AssertionError, match="exactly 1 job"):
        assert_enqueued(tasks.send_welcome, args=[1], count=1)
    assert_enqueued(tasks.urgent, count=0)


def test_a_failed_assertion_lists_the_tasks_jobs_finished_ones_marked():
    tasks.send_welcome.enqueue(1)
    drain()
    tasks.send_welcome.using(queue_name="high").enqueue(2, locale="de")
    with pytest.raises(AssertionError) as failure:
        assert_enqueued(tasks.send_welcome, args=[3])
    message = str(failure.value)
    assert message.startswith(
        "Expected a job of tests.support.tasks.testing.send_welcome with args=[3] waiting; its jobs"
    )
    lines = message.splitlines()[1:]
    assert lines[0] == (
        "  - tests.support.tasks.testing.send_welcome args=[1] kwargs={} queue='default' "
        "priority=0 status=succeeded (finished)"
    )
    assert lines[1] == (
        "  - tests.support.tasks.testing.send_welcome args=[2] kwargs={'locale': 'de'} "
        "queue='high' priority=0 status=queued"
    )
    with pytest.raises(AssertionError, match="it has no job at all"):
        assert_enqueued(tasks.urgent)


def test_refute_enqueued_is_the_opposite():
    refute_enqueued(tasks.send_welcome)
    tasks.send_welcome.enqueue(1)
    refute_enqueued(tasks.send_welcome, args=[2])
    refute_enqueued(tasks.send_welcome, kwargs={"locale": "fr"})
    refute_enqueued(tasks.send_welcome, queue="high")
    with pytest.raises(AssertionError, match=r"Expected no job of .*send_welcome with args=\[1\]"):
        refute_enqueued(tasks.send_welcome, args=[1])
    drain()
    refute_enqueued(tasks.send_welcome)


def _enqueue_later(delay: float, *args) -> threading.Thread:
    """Another thread enqueues (and commits, on its own connection) after ``delay``."""

    def enqueue() -> None:
        try:
            time.sleep(delay)
            tasks.send_welcome.enqueue(*args)
        finally:
            connections.close_all()

    thread = threading.Thread(target=enqueue)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_within_keeps_looking_for_a_job_another_thread_commits():
    thread = _enqueue_later(0.3, 5)
    started = time.monotonic()
    try:
        # Returns once the job is there, long before the end of a ``within`` that no pause of
        # a loaded machine outlasts.
        assert_enqueued(tasks.send_welcome, args=[5], within=60)
        assert time.monotonic() - started < 20
    finally:
        thread.join()
    with pytest.raises(AssertionError):
        assert_enqueued(tasks.send_welcome, args=[6], within=0.2)


@pytest.mark.django_db(transaction=True)
def test_refute_within_fails_when_a_job_appears_meanwhile():
    thread = _enqueue_later(0.2, 9)
    try:
        with pytest.raises(AssertionError):
            refute_enqueued(tasks.send_welcome, within=60)  # fails as soon as it is there
    finally:
        thread.join()
    started = time.monotonic()
    refute_enqueued(tasks.urgent, within=0.3)
    assert time.monotonic() - started >= 0.3
