"""Failures, backoff, cancellation, results in every status, and Django's signals."""

from datetime import timedelta

import pytest
from django.db import transaction

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.tasks_framework import TaskResultStatus, task_enqueued
from tests.support.helpers import claim_one, snapshot, try_claim, try_claim_batch, wait_until_due
from tests.support.tasks.basic import add, flaky, quick_retry

pytestmark = pytest.mark.django_db(transaction=True)


def _fail(lease, retryable=True, message="boom"):
    return execute(
        jobs_sql.fail(
            lease,
            exception_class_path="builtins.ValueError",
            message=message,
            traceback=f"Traceback ...\nValueError: {message}\n",
            retryable=retryable,
            backoff_cap_seconds=3600,
        )
    )


def test_backoff_grows_and_retrying_jobs_wait_for_run_after(backend):
    job_id = add.using(max_attempts=5, backoff_seconds=10).enqueue(1, 2).id
    delays = []
    for attempt in range(1, 5):
        claimed = claim_one(job_id, f"w{attempt}")
        assert claimed.attempt == attempt
        outcome = _fail(claimed.lease)
        assert outcome.status == "retrying"
        job = snapshot(job_id)
        delays.append((job["run_after"] - job["last_attempted_at"]).total_seconds())
        base = 10 * 2 ** (attempt - 1)
        assert base / 2 - 1 <= delays[-1] <= base + 1  # equal jitter: between half and full
        assert try_claim([job_id], "eager") == []
        assert try_claim_batch(worker_id="eager") == []
        Job.objects.filter(pk=job_id).update(run_after=job["run_after"] - timedelta(hours=2))
    assert delays == sorted(delays) and delays[-1] > delays[0] * 3


def test_last_attempt_fails_for_good_keeping_every_error(backend):
    job_id = flaky.enqueue(3).id  # max_attempts=2, backoff 0.5s
    first = claim_one(job_id, "w1")
    assert _fail(first.lease, message="first").status == "retrying"
    wait_until_due(job_id)
    second = claim_one(job_id, "w2")
    assert _fail(second.lease, message="second").status == "failed"
    result = backend.get_result(job_id)
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == ["builtins.ValueError"] * 2
    assert "ValueError: second" in result.errors[1].traceback
    assert result.worker_ids == ["w1", "w2"]
    job = Job.objects.get(pk=job_id)
    assert [(e["attempt"], e["worker_id"], e["message"]) for e in job.errors] == [
        (1, "w1", "first"),
        (2, "w2", "second"),
    ]


def test_non_retryable_error_fails_at_once(backend):
    claimed = claim_one(quick_retry.enqueue(1).id, "w")
    assert _fail(claimed.lease, retryable=False).status == "failed"


def test_cancel_queued_job_is_immediate_and_final(backend):
    job_id = add.enqueue(1, 2).id
    assert execute(operator_actions_sql.cancel([job_id])) == {Job.objects.get().id: "cancelled"}
    assert try_claim([job_id], "w") == []
    assert backend.get_result(job_id).status == TaskResultStatus.FAILED
    assert execute(operator_actions_sql.cancel([job_id])) == {}  # nothing left to cancel


def test_cancel_running_job_is_requested_then_finished_by_its_worker(backend):
    claimed = claim_one(add.enqueue(1, 2).id, "w")
    assert backend.cancel([claimed.id]) == {claimed.id: "cancel_requested"}
    reply = execute(jobs_sql.heartbeat([claimed.lease], lease_seconds=30))
    assert reply.cancel_requested == {claimed.id}
    assert execute(jobs_sql.finish_cancelled(claimed.lease)) is True
    assert Job.objects.get(pk=claimed.id).status == "cancelled"


def test_failure_after_cancel_request_ends_cancelled_not_retried(backend):
    claimed = claim_one(quick_retry.enqueue(1).id, "w")
    backend.cancel([claimed.id])
    assert _fail(claimed.lease).status == "cancelled"
    assert len(Job.objects.get(pk=claimed.id).errors) == 1


def test_release_gives_the_job_back_without_counting_the_attempt(backend):
    claimed = claim_one(add.enqueue(1, 2).id, "w")
    assert execute(jobs_sql.hand_back(claimed.lease)) is True
    assert Job.objects.get(pk=claimed.id).worker_ids == []
    again = claim_one(claimed.id, "w2")
    assert again.attempt == 1 and again.lease.lease_version == 2
    assert again.worker_ids == ["w2"]


def test_get_result_reports_every_status(backend):
    queued = add.enqueue(1, 2)
    assert backend.get_result(queued.id).status == TaskResultStatus.READY

    running = claim_one(add.enqueue(2, 3).id, "w-run")
    result = backend.get_result(str(running.id))
    assert (result.status, result.worker_ids) == (TaskResultStatus.RUNNING, ["w-run"])
    assert result.started_at is not None and result.last_attempted_at is not None
    with pytest.raises(ValueError, match="not finished"):
        _ = result.return_value

    done = claim_one(add.enqueue(3, 4).id, "w-done")
    execute(jobs_sql.complete(done.lease, 7))
    result = backend.get_result(str(done.id))
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 7)
    assert result.finished_at is not None and result.is_finished
    assert result.task.func is add.func

    retrying = claim_one(quick_retry.enqueue(5).id, "w")
    _fail(retrying.lease)
    assert backend.get_result(str(retrying.id)).status == TaskResultStatus.READY

    failed = claim_one(quick_retry.enqueue(6).id, "w")
    _fail(failed.lease, retryable=False)
    result = backend.get_result(str(failed.id))
    assert result.status == TaskResultStatus.FAILED and len(result.errors) == 1

    cancelled = add.enqueue(4, 5)
    backend.cancel([cancelled.id])
    assert backend.get_result(cancelled.id).status == TaskResultStatus.FAILED

    from django_leasequeue.tasks_framework import TaskResultDoesNotExist

    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result("not-a-uuid")
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result("01900000-0000-7000-8000-000000000000")


def test_result_refresh_follows_the_row(backend):
    result = add.enqueue(1, 2)
    claimed = claim_one(result.id, "w")
    execute(jobs_sql.complete(claimed.lease, 3))
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3


def test_task_enqueued_signal_fires_once_per_new_job(backend):
    seen = []

    def receiver(sender, task_result, **kwargs):
        seen.append(task_result.id)

    task_enqueued.connect(receiver)
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            add.enqueue(0, 0)
            raise RuntimeError("rolled back: never enqueued")
        with transaction.atomic():
            result = add.enqueue(1, 2)
            assert seen == []  # only once the job is durable
        add.using(unique_key="once").enqueue(1, 1)
        add.using(unique_key="once").enqueue(1, 1)  # the same job: no second signal
    finally:
        task_enqueued.disconnect(receiver)
    assert len(seen) == 2 and seen[0] == result.id
