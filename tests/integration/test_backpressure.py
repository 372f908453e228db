"""max_pending: an enqueue past a cap raises QueueFull and writes nothing, race-free under
concurrent enqueuers; a unique-key match still returns the job holding the key."""

import pytest
from django.db import transaction

from django_leasequeue import QueueFull, group, step
from django_leasequeue.models import Job, WorkflowRun
from tests.support.helpers import claim_one, run_in_threads
from tests.support.tasks import flow as flow_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def _unfinished(task) -> int:
    return Job.objects.filter(
        task_path=task.module_path, status__in=["queued", "retrying", "running"]
    ).count()


def test_eight_threads_enqueueing_at_once_never_pass_the_cap(backend):
    def enqueue_many(i):
        outcomes = []
        for n in range(15):
            try:
                flow_tasks.bounded.enqueue(i * 100 + n)
                outcomes.append("enqueued")
            except QueueFull as exc:
                outcomes.append(exc)
        return outcomes

    outcomes = [outcome for outcomes in run_in_threads(8, enqueue_many) for outcome in outcomes]
    assert outcomes.count("enqueued") == 50
    refusals = [outcome for outcome in outcomes if outcome != "enqueued"]
    assert len(refusals) == 8 * 15 - 50
    assert all(isinstance(refusal, QueueFull) for refusal in refusals)
    assert _unfinished(flow_tasks.bounded) == 50


def test_queue_full_names_the_task_the_key_and_the_cap(backend):
    flow_tasks.bounded_per_user.enqueue(7, 1)
    flow_tasks.bounded_per_user.enqueue(7, 2)
    flow_tasks.bounded_per_user.enqueue(8, 1)  # another key has its own room
    with pytest.raises(QueueFull) as refused:
        flow_tasks.bounded_per_user.enqueue(7, 3)
    error = refused.value
    assert (error.task, error.key, error.cap, error.pending, error.adding) == (
        "tests.support.tasks.flow.bounded_per_user",
        "user:7",
        2,
        2,
        1,
    )
    assert "tests.support.tasks.flow.bounded_per_user" in str(error)
    assert "'user:7'" in str(error) and "max_pending=2" in str(error)
    assert "nothing was enqueued" in str(error)


def test_a_finished_job_makes_room_again(backend):
    first = flow_tasks.bounded_per_user.enqueue(1, 1).id
    flow_tasks.bounded_per_user.enqueue(1, 2)
    with pytest.raises(QueueFull):
        flow_tasks.bounded_per_user.enqueue(1, 3)
    claim_one(first, "w")
    Job.objects.filter(pk=first).update(status="succeeded")
    assert flow_tasks.bounded_per_user.enqueue(1, 3).status == "READY"


def test_enqueue_many_past_the_cap_writes_nothing(backend):
    calls = [(flow_tasks.bounded_per_user, (5, n), {}) for n in range(3)]
    with pytest.raises(QueueFull):
        backend.enqueue_many([(flow_tasks.unlimited, (0,), {}), *calls])
    assert Job.objects.count() == 0


def test_a_batch_bigger_than_the_cap_says_so(backend):
    """max_pending=2 per user: a batch of 3 for one user can never fit, whatever is pending."""
    calls = [(flow_tasks.bounded_per_user, (5, n), {}) for n in range(3)]
    with pytest.raises(QueueFull) as refused:
        backend.enqueue_many(calls)
    error = refused.value
    assert (error.key, error.cap, error.pending, error.adding) == ("user:5", 2, 0, 3)
    assert str(error) == (
        "Queue full: the batch adds 3 jobs to task tests.support.tasks.flow.bounded_per_user for "
        "key 'user:5', more than its cap allows even with none unfinished (max_pending=2 per "
        "max_pending_key); nothing was enqueued."
    )


def test_a_batch_that_fits_an_empty_cap_but_not_what_is_pending_says_both(backend):
    flow_tasks.bounded_per_user.enqueue(6, 0)
    with pytest.raises(QueueFull) as refused:
        backend.enqueue_many([(flow_tasks.bounded_per_user, (6, n), {}) for n in (1, 2)])
    error = refused.value
    assert (error.pending, error.adding, error.cap) == (1, 2, 2)
    assert "has 1 unfinished job(s), and the batch's 2 more would pass its cap" in str(error)
    assert _unfinished(flow_tasks.bounded_per_user) == 1


def test_a_unique_key_match_returns_the_holder_even_at_the_cap(backend):
    held = [flow_tasks.bounded_unique.enqueue(n).id for n in range(3)]
    assert flow_tasks.bounded_unique.enqueue(1).id == held[1]
    with pytest.raises(QueueFull):
        flow_tasks.bounded_unique.enqueue(4)


def test_the_queue_cap_counts_every_task_of_the_queue(backend, settings):
    """The llm queue takes at most 1000 unfinished jobs (tests/support/settings/__init__.py)."""
    backend.enqueue_many([(flow_tasks.llm_call, (n % 7, n, 0), {}) for n in range(1000)])
    with pytest.raises(QueueFull) as refused:
        flow_tasks.llm_call.enqueue(1, 1000, 0)
    assert (refused.value.task, refused.value.queue, refused.value.cap) == (None, "llm", 1000)
    assert 'queue_limits["llm"]["max_pending"] = 1000' in str(refused.value)


def test_a_refusal_inside_the_callers_transaction_leaves_the_rest_of_it(backend):
    flow_tasks.bounded_per_user.enqueue(3, 1)
    flow_tasks.bounded_per_user.enqueue(3, 2)
    with transaction.atomic():
        kept = flow_tasks.unlimited.enqueue(1).id
        with pytest.raises(QueueFull):
            flow_tasks.bounded_per_user.enqueue(3, 3)
    assert Job.objects.filter(pk=kept).exists()
    assert _unfinished(flow_tasks.bounded_per_user) == 2


def test_a_workflow_past_a_cap_raises_queue_full_and_writes_nothing():
    """A workflow's steps count towards their task's cap before any of them is written."""
    flow_tasks.bounded_per_user.enqueue(7, 1)
    with pytest.raises(QueueFull) as refused:
        group(*(step(flow_tasks.bounded_per_user, 7, n) for n in range(2, 4))).enqueue()
    assert (refused.value.pending, refused.value.adding, refused.value.cap) == (1, 2, 2)
    assert not WorkflowRun.objects.exists()
    assert Job.objects.count() == 1
    group(
        step(flow_tasks.bounded_per_user, 7, 2), step(flow_tasks.bounded_per_user, 8, 1)
    ).enqueue()
    assert Job.objects.count() == 3
