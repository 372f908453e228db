"""Workflows through real runworkers processes: released steps woken at once, cancel and retry,
steps claimed around a paused queue. Results flowing down chains and into chords, a failure
cancelling what needed it and the callbacks, are shown in the test's own process by the testing
drain (tests/integration/test_drained_outcomes.py)."""

import itertools

import pytest

from django_leasequeue import Workflow, WorkflowHandle, WorkflowStatus, chain, step
from django_leasequeue.models import Job
from django_leasequeue.operations import retry_failed_steps
from tests.acceptance.harness import wait_until
from tests.support.servers import RedisServer
from tests.support.tasks.workflows import add_one, fetch, length, noop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def _finished(handle: WorkflowHandle, timeout: float = 30) -> WorkflowHandle:
    def done() -> bool:
        handle.refresh()
        return handle.finished

    wait_until(done, timeout, f"workflow {handle.name or handle.id} to finish")
    return handle


def test_each_step_a_completion_releases_is_woken_at_once_not_found_by_polling(start_workers):
    """A batch of completed steps names the steps it released (complete_steps), and the worker
    wakes workers for them: with polls 1.5 s apart and the sweep's re-signal a minute apart,
    each step of a chain of eight starts within 0.5 s of its parent's finish (found by polls,
    all seven would do so about once in 2,000 runs)."""
    backend = fetch.get_backend()
    # Wakeups earlier tests left in this run's lists (jobs their workers claimed by polling)
    # would be popped first, each claiming nothing, while a poll found the step.
    while backend.wakeups.pop(sorted(backend.queues), 10_000, 0):
        pass
    slow_to_look = {"poll_seconds": 1.5, "sweep_seconds": 60, "resignal_after_seconds": 60}
    start_workers("--concurrency", "4", options=slow_to_look)
    chained = chain(step(fetch, "a"), step(length), *(step(add_one) for _ in range(6))).enqueue()
    assert _finished(chained, timeout=60).status == WorkflowStatus.SUCCEEDED
    assert chained.steps["add_one_6"].return_value == len("page of a") + 6
    by_name = {job.step_name: job for job in Job.objects.filter(workflow_id=chained.id)}
    order = ["fetch", "length", "add_one", *(f"add_one_{n}" for n in range(2, 7))]
    pickups = [
        (by_name[child].last_attempted_at - by_name[parent].finished_at).total_seconds()
        for parent, child in itertools.pairwise(order)
    ]
    assert max(pickups) < 0.5, pickups


def test_retrying_the_failed_step_brings_back_the_steps_it_cancelled(start_workers):
    start_workers("--concurrency", "2")
    wf = Workflow()
    first = wf.add(fetch, args=["a"])
    wf.add(noop, after=[first])
    handle = wf.enqueue()
    # Make the first step fail for good, as if its task had: then retry it from the admin.
    wait_until(
        lambda: Job.objects.filter(workflow_id=handle.id, status="succeeded").count() == 2,
        20,
        "the workflow to run",
    )
    Job.objects.filter(pk=handle.step_ids["fetch"]).update(status="failed")
    handle.refresh()
    assert handle.status == WorkflowStatus.FAILED
    assert handle.steps["noop"].status.name == "SUCCESSFUL"
    report = retry_failed_steps(handle.id, "default")
    assert report.changed_count == 1
    assert _finished(handle).status == WorkflowStatus.SUCCEEDED


def test_cancelling_a_workflow_cancels_its_waiting_steps_and_it_ends_cancelled(start_workers):
    start_workers("--concurrency", "2")
    handle = chain(step(fetch, "slow", 1.5), step(length), step(add_one)).enqueue()
    wait_until(
        lambda: Job.objects.get(pk=handle.step_ids["fetch"]).status == "running", 20, "a start"
    )
    assert handle.cancel() == {"cancelled": 2, "cancel_requested": 1}
    assert _finished(handle).status == WorkflowStatus.CANCELLED
    assert {result.status.name for result in handle.steps.values()} == {"FAILED"}


def test_steps_claimed_while_another_queue_is_paused_still_get_their_upstream_results(
    start_workers, backend
):
    """With a queue paused, polling claims from the open queues' heads (claim_batch_by_queue):
    that path must hand a step its upstream results, like every other claim path."""
    backend.pause_queue("low", reason="incident")
    nothing_listens = RedisServer()  # never started: the workers poll, no wakeups
    start_workers("--concurrency", "2", redis_url=nothing_listens.url)
    handle = chain(step(fetch, "a"), step(length), step(add_one)).enqueue()
    assert _finished(handle).status == WorkflowStatus.SUCCEEDED
    assert handle.steps["add_one"].return_value == len("page of a") + 1
