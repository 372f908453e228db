"""Outcomes of jobs, run in the test's process by the testing drain (``django_leasequeue.testing``)
through the worker's own claim, run and completion statements: tests that started real
``runworkers`` processes only to read a job's result (from tests/acceptance/test_workflows.py and
tests/acceptance/test_queue_control.py). What needs real processes (crashes, leases lost,
wakeups, pauses across workers) stays there."""

import pytest

from django_leasequeue import Workflow, WorkflowStatus, chain, chord, group, step
from django_leasequeue.models import Job
from django_leasequeue.testing import drain
from tests.support.tasks import control as control_tasks
from tests.support.tasks.workflows import add_one, collect, explode, fetch, length, noop, report

pytestmark = pytest.mark.django_db


def _steps(handle) -> dict[str, Job]:
    return {name: Job.objects.get(pk=job_id) for name, job_id in handle.step_ids.items()}


def test_a_chain_passes_each_return_value_on_and_a_chord_gets_them_all_in_order():
    chained = chain(step(fetch, "a"), step(length), step(add_one)).enqueue()
    chorded = chord(group(step(fetch, "x"), step(fetch, "yy")), step(collect)).enqueue()
    drain()
    chained.refresh()
    chorded.refresh()
    assert chained.status == WorkflowStatus.SUCCEEDED
    assert chained.steps["add_one"].return_value == len("page of a") + 1
    assert chorded.status == WorkflowStatus.SUCCEEDED
    assert chorded.steps["collect"].return_value == ["page of x", "page of yy"]
    assert Job.objects.get(pk=chorded.step_ids["collect"]).args == []  # passed, not stored


def test_a_failed_step_cancels_what_needed_it_and_the_callbacks_say_how_it_ended():
    wf = Workflow("fails")
    bad = wf.add(explode, args=["no page"])
    needs_it = wf.add(noop, after=[bad], name="parse")
    wf.add(noop, after=[needs_it], name="store")
    wf.add(report, after=[bad], run_if="finished", name="cleanup")
    wf.on_success(noop)
    wf.on_failure(report)
    handle = wf.enqueue()
    drain()
    handle.refresh()
    assert handle.status == WorkflowStatus.FAILED
    steps = _steps(handle)
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


def test_a_step_that_snoozes_too_often_fails_and_releases_what_waits_for_it():
    wf = Workflow("snoozes")
    sleeper = wf.add(control_tasks.snoozes_forever)
    wf.add(report, after=[sleeper], run_if="finished", name="cleanup")
    wf.add(noop, after=[sleeper], name="needs_it")
    handle = wf.enqueue()
    drain(with_scheduled=True)
    handle.refresh()
    assert handle.status == WorkflowStatus.FAILED
    steps = _steps(handle)
    assert steps["snoozes_forever"].errors[-1]["exception_class_path"].endswith("TooManySnoozes")
    assert steps["cleanup"].status == "succeeded"
    assert steps["needs_it"].status == "cancelled"


def test_a_retry_that_would_start_after_the_expiry_ends_the_job_expired():
    job_id = control_tasks.fails_with_a_late_retry.enqueue().id
    assert drain().failed == 1
    job = Job.objects.get(pk=job_id)
    assert job.status == "failed"
    assert job.attempt == 1
    assert [error["exception_class_path"] for error in job.errors] == [
        "builtins.ValueError",
        "django_leasequeue.exceptions.JobExpired",
    ]
    assert job.finished_at < job.expires_at  # at once, not by the sweep at the expiry


def test_a_job_snoozed_three_times_then_succeeds_with_attempt_1():
    async_job = control_tasks.snoozes_three_times.enqueue().id
    sync_job = control_tasks.snoozes_in_a_thread.enqueue().id
    too_many = control_tasks.snoozes_forever.enqueue().id
    done = drain(with_scheduled=True)
    assert (done.succeeded, done.failed, done.snoozed) == (2, 1, 6)
    job = Job.objects.get(pk=async_job)
    assert (job.attempt, job.snoozes, job.result, job.errors) == (1, 3, {"snoozed": 3}, [])
    assert len(job.worker_ids) == 1  # Django's TaskResult.attempts counts these
    job = Job.objects.get(pk=sync_job)
    assert (job.attempt, job.snoozes, job.result) == (1, 1, "done")
    job = Job.objects.get(pk=too_many)
    assert (job.status, job.attempt, job.snoozes) == ("failed", 1, 3)
    [error] = job.errors
    assert error["exception_class_path"] == "django_leasequeue.exceptions.TooManySnoozes"
