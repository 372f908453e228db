"""Workflows through real runworkers processes: results flow down chains and into chords, a
failure cancels what needed it and runs what did not, callbacks run once, cancel and retry."""

import itertools

import pytest

from django_leasequeue import Workflow, WorkflowHandle, WorkflowStatus, chain, chord, group, step
from django_leasequeue.models import Job
from django_leasequeue.operations import retry_failed_steps
from tests.acceptance.harness import wait_until
from tests.support.servers import RedisServer
from tests.support.tasks.control import snoozes_forever
from tests.support.tasks.workflows import add_one, collect, explode, fetch, length, noop, report

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def _finished(handle: WorkflowHandle, timeout: float = 30) -> WorkflowHandle:
    def done() -> bool:
        handle.refresh()
        return handle.finished

    wait_until(done, timeout, f"workflow {handle.name or handle.id} to finish")
    return handle


def test_a_chain_passes_each_return_value_on_and_a_chord_gets_them_all_in_order(start_workers):
    start_workers("--concurrency", "4")
    chained = chain(step(fetch, "a"), step(length), step(add_one)).enqueue()
    chorded = chord(group(step(fetch, "x", 0.3), step(fetch, "yy")), step(collect)).enqueue()
    assert _finished(chained).status == WorkflowStatus.SUCCEEDED
    assert chained.steps["add_one"].return_value == len("page of a") + 1
    # The callback got the group's results in the group's order, not in finishing order.
    assert _finished(chorded).status == WorkflowStatus.SUCCEEDED
    assert chorded.steps["collect"].return_value == ["page of x", "page of yy"]
    assert Job.objects.get(pk=chorded.step_ids["collect"]).args == []  # passed, not stored


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


def test_a_failed_step_cancels_what_needed_it_and_the_callbacks_say_how_it_ended(start_workers):
    start_workers("--concurrency", "4")
    wf = Workflow("fails")
    bad = wf.add(explode, args=["no page"])
    needs_it = wf.add(noop, after=[bad], name="parse")
    wf.add(noop, after=[needs_it], name="store")
    wf.add(report, after=[bad], run_if="finished", name="cleanup")
    wf.on_success(noop)
    wf.on_failure(report)
    handle = _finished(wf.enqueue())
    assert handle.status == WorkflowStatus.FAILED
    steps = {name: Job.objects.get(pk=job_id) for name, job_id in handle.step_ids.items()}
    assert steps["explode"].status == "failed"
    assert steps["parse"].status == "cancelled"
    assert steps["parse"].errors[-1]["message"] == "upstream step explode failed"
    assert steps["parse"].attempt == 0  # never ran
    assert steps["store"].errors[-1]["message"] == "upstream step parse was cancelled"
    assert steps["cleanup"].status == "succeeded"
    assert steps["cleanup"].result == {"upstream": {"explode": None}}
    assert steps["on_success"].status == "cancelled"
    assert steps["on_failure"].status == "succeeded"
    assert set(steps["on_failure"].result["upstream"]) == {"explode", "parse", "store", "cleanup"}


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


def test_a_step_that_snoozes_too_often_fails_and_releases_what_waits_for_it(start_workers):
    start_workers("--concurrency", "2")
    wf = Workflow("snoozes")
    sleeper = wf.add(snoozes_forever)
    wf.add(report, after=[sleeper], run_if="finished", name="cleanup")
    wf.add(noop, after=[sleeper], name="needs_it")
    handle = _finished(wf.enqueue())
    assert handle.status == WorkflowStatus.FAILED
    steps = {name: Job.objects.get(pk=job_id) for name, job_id in handle.step_ids.items()}
    assert steps["snoozes_forever"].errors[-1]["exception_class_path"].endswith("TooManySnoozes")
    assert steps["cleanup"].status == "succeeded"
    assert steps["needs_it"].status == "cancelled"
