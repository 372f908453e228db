"""``django_leasequeue.testing.drain``: due jobs run in the test's process, inside its
transaction, through the worker's claim, run and completion statements at the drain's clock."""

import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from django_leasequeue import JobExpired, JobTimeout, Workflow, chain, step
from django_leasequeue.models import Job, PausedQueue
from django_leasequeue.testing import assert_enqueued, drain, enqueued_jobs, refute_enqueued
from django_leasequeue.testing.drain import DrainResult
from tests.support.models import Receipt
from tests.support.tasks import testing as tasks

pytestmark = pytest.mark.django_db


def _job(result):
    return Job.objects.get(pk=result.id)


def test_a_job_enqueued_in_the_test_runs_and_its_result_is_read_back(backend):
    result = tasks.send_welcome.enqueue(7, locale="fr")
    done = drain()
    assert (done.ran, done.succeeded, done.failed) == (1, 1, 0)
    assert backend.get_result(result.id).return_value == "welcome 7 (fr)"
    job = _job(result)
    assert job.status == "succeeded" and job.attempt == 1
    assert job.worker_ids[0].split(":")[2] == "drain"  # host:pid:drain:random
    assert job.started_at <= job.finished_at
    refute_enqueued(tasks.send_welcome)


def test_the_tasks_own_queries_see_the_tests_uncommitted_rows_sync_and_async(backend):
    Receipt.objects.bulk_create(
        [Receipt(job_id="00000000-0000-0000-0000-000000000001", written_by="testing")] * 2
    )
    sync_result = tasks.counts_receipts.enqueue()
    async_result = tasks.acounts_receipts.enqueue()
    assert drain().succeeded == 2
    assert backend.get_result(sync_result.id).return_value == 2
    assert backend.get_result(async_result.id).return_value == 2


def test_what_a_task_writes_is_there_for_the_test_after_the_drain():
    tasks.writes_receipts.enqueue(3)
    drain()
    assert Receipt.objects.filter(written_by="testing").count() == 3


def test_a_failure_is_recorded_and_its_retry_waits_for_its_backoff():
    result = tasks.fails.enqueue("broken")
    done = drain()
    assert (done.ran, done.failed, done.retried) == (1, 1, 1)
    job = _job(result)
    assert job.status == "retrying" and job.attempt == 1
    assert job.errors[0]["exception_class_path"] == "builtins.ValueError"
    # Counted from the drain's clock: 30 s of backoff, with jitter down to half of it.
    assert job.run_after - job.last_attempted_at >= timedelta(seconds=15)
    # The row the task wrote before it raised stays, as in a worker.
    assert Receipt.objects.filter(written_by="broken").count() == 1
    assert drain().ran == 0
    assert_enqueued(tasks.fails, args=["broken"])


def test_with_scheduled_runs_retries_until_the_attempts_are_used_up():
    result = tasks.fails.enqueue("again")
    done = drain(with_scheduled=True)
    assert (done.ran, done.failed, done.retried) == (3, 3, 2)
    assert _job(result).status == "failed"
    assert _job(result).attempt == 3


def test_with_scheduled_runs_a_job_deferred_by_run_after_and_without_it_waits():
    result = tasks.send_welcome.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1)
    assert drain().ran == 0
    assert [job.id for job in enqueued_jobs(tasks.send_welcome)] == [result.id]
    assert drain(with_scheduled=True).succeeded == 1


def test_a_job_deferred_to_a_moment_that_has_passed_is_due(backend):
    """The drain's clock is the wall clock, not the transaction's start (now() in SQL)."""
    result = tasks.send_welcome.using(run_after=timezone.now()).enqueue(1)
    assert drain().succeeded == 1
    assert backend.get_result(result.id).status == "SUCCESSFUL"


def test_a_snoozed_job_waits_then_runs_with_scheduled_its_attempt_not_counted():
    result = tasks.snoozes_once.enqueue()
    done = drain()
    assert (done.ran, done.snoozed) == (1, 1)
    job = _job(result)
    assert job.status == "queued" and job.attempt == 0
    assert job.run_after - job.last_attempted_at == timedelta(minutes=5)
    assert drain().ran == 0
    done = drain(with_scheduled=True)
    assert done.succeeded == 1
    assert _job(result).result == "after the snooze"


def test_recursion_follows_what_the_jobs_enqueue_and_without_it_only_the_first_jobs_run():
    tasks.counts_down.enqueue(3)
    assert drain(with_recursion=False).ran == 1
    assert [job.args for job in enqueued_jobs(tasks.counts_down)] == [[2]]
    done = drain()
    assert done.succeeded == 3
    refute_enqueued(tasks.counts_down)


def test_without_recursion_each_job_of_the_snapshot_is_attempted_once():
    tasks.fails.enqueue("once")
    tasks.send_welcome.enqueue(1)
    done = drain(with_recursion=False, with_scheduled=True)
    assert (done.ran, done.failed, done.succeeded) == (2, 1, 1)


def test_limit_caps_the_attempts_of_a_drain():
    for n in range(5):
        tasks.send_welcome.enqueue(n)
    assert drain(limit=2).ran == 2
    assert len(enqueued_jobs(tasks.send_welcome)) == 3
    assert drain(limit=10).ran == 3


def test_a_queue_is_drained_alone_in_priority_order():
    tasks.send_welcome.enqueue(1)
    low = tasks.urgent.using(priority=1).enqueue(1)
    high = tasks.urgent.enqueue(2)
    assert drain("high", with_recursion=False, limit=1).ran == 1
    assert _job(high).status == "succeeded" and _job(low).status == "queued"
    assert drain(["high"]).ran == 1
    assert_enqueued(tasks.send_welcome, queue="default")
    assert drain().ran == 1


def test_with_safety_off_the_failure_is_recorded_then_raised_and_the_rest_handed_back():
    failing = tasks.fails.enqueue("loud")
    other = tasks.send_welcome.using(priority=-1).enqueue(1)
    with pytest.raises(ValueError, match="loud"):
        drain(with_safety=False)
    assert _job(failing).status == "retrying"
    other_job = _job(other)
    assert other_job.status == "retrying" and other_job.attempt == 0  # handed back untouched
    assert other_job.worker_ids == []
    assert drain().succeeded == 1


def test_a_statement_of_the_task_that_fails_leaves_the_tests_transaction_usable():
    result = tasks.fails_on_a_duplicate.enqueue("twice")
    done = drain(with_scheduled=True)
    assert (done.ran, done.failed) == (2, 2)
    job = _job(result)
    assert job.status == "failed"
    assert "IntegrityError" in job.errors[0]["exception_class_path"]
    # The failed attempt's own writes went with its savepoint; the test goes on.
    assert not User.objects.filter(username="twice").exists()


def test_a_context_task_reports_progress_checkpoints_and_resumes_on_its_retry():
    result = tasks.works_with_context.enqueue(3)
    done = drain(with_scheduled=True)
    assert (done.failed, done.succeeded) == (1, 1)
    job = _job(result)
    assert job.result == {
        "attempt": 2,
        "checkpoint_seen": {"attempt": 1},
        "job_id": str(result.id),
    }
    assert job.progress["current"] == 3 and job.progress["message"] == "step 3"
    assert job.checkpoint == {"attempt": 2}


def test_an_async_context_task_reports_through_the_tests_connection():
    result = tasks.aworks_with_context.enqueue()
    drain()
    job = _job(result)
    assert job.result == {"attempt": 1, "checkpoint": {"half": True}}
    assert job.progress["message"] == "half"


def test_a_sync_task_that_returns_after_its_timeout_ends_timed_out_and_an_async_one_is_stopped():
    sync_job = tasks.outlives_its_timeout.enqueue()
    async_job = tasks.aoutlives_its_timeout.enqueue()
    assert drain().failed == 2
    for result in (sync_job, async_job):
        path = _job(result).errors[0]["exception_class_path"]
        assert path == f"{JobTimeout.__module__}.JobTimeout"


def test_an_expired_job_fails_with_job_expired_without_running():
    result = tasks.expires_at_once.enqueue(1)
    time.sleep(0.01)  # past its expiry, 1 ms after the enqueue
    done = drain()
    assert (done.ran, done.expired) == (0, 1)
    job = _job(result)
    assert job.status == "failed" and job.attempt == 0
    assert job.errors[-1]["exception_class_path"] == f"{JobExpired.__module__}.JobExpired"


def test_a_concurrency_cap_holds_and_every_job_runs_in_turn():
    for n in range(3):
        tasks.capped.enqueue(n)
    assert drain(with_recursion=False).ran == 1  # the others are held back: not due yet
    assert drain().ran == 2


def test_a_rate_limit_holds_back_the_next_start_until_its_time():
    tasks.rate_limited.enqueue(1)
    tasks.rate_limited.enqueue(2)
    assert drain().ran == 1
    assert len(enqueued_jobs(tasks.rate_limited)) == 1
    assert drain().ran == 0


def test_a_paused_queue_is_not_drained():
    tasks.urgent.enqueue(1)
    paused = PausedQueue.objects.create(queue_name="high", reason="testing")
    assert drain().ran == 0
    paused.delete()
    assert drain().ran == 1


def test_a_chain_and_a_workflow_run_to_their_end(backend):
    handle = chain(step(tasks.returns, 1), step(tasks.returns)).enqueue()
    workflow = Workflow("fan")
    first = workflow.add(tasks.returns, args=[2])
    workflow.add(tasks.returns, args=[3], after=[first])
    fanned = workflow.enqueue()
    assert len(enqueued_jobs()) == 4  # two queued, two waiting for their parent
    done = drain()
    assert done.succeeded == 4
    handle.refresh()
    fanned.refresh()
    assert handle.status == fanned.status == "succeeded"
    assert [step.return_value for step in handle.steps.values()] == [1, 1]


def test_the_drain_result_counts_every_outcome():
    assert drain() == DrainResult()


def test_a_snooze_set_past_the_jobs_expiry_ends_it_expired():
    result = tasks.snoozes_past_its_expiry.enqueue()
    done = drain()
    assert (done.ran, done.failed, done.snoozed) == (1, 1, 0)
    job = _job(result)
    assert job.status == "failed"
    assert [error["exception_class_path"] for error in job.errors] == [
        f"{JobExpired.__module__}.JobExpired"
    ]
