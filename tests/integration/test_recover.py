"""Recover sweep: expired leases come back, poison pills end failed, sweeps may overlap."""

import time

import pytest

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import (
    claim_and_let_expire,
    claim_one,
    recover,
    run_in_threads,
    wait_until_due,
)
from tests.support.tasks.basic import add, poison, quick_retry

pytestmark = pytest.mark.django_db(transaction=True)


def test_expired_lease_becomes_retrying_and_claimable_again(backend):
    job_id = quick_retry.enqueue(1).id
    claim_and_let_expire(job_id, "crashed-worker")
    [swept] = recover()
    assert (str(swept.id), swept.status) == (job_id, "retrying")
    job = Job.objects.get(pk=job_id)
    assert job.errors[0]["exception_class_path"] == "django_leasequeue.exceptions.LeaseExpired"
    assert "crashed-worker" in job.errors[0]["message"]
    wait_until_due(job_id)
    assert claim_one(job_id, "rescuer").attempt == 2


def test_live_leases_are_left_alone(backend):
    job_id = add.enqueue(1, 2).id
    claim_one(job_id, "alive", lease_seconds=30)
    assert recover() == []
    assert Job.objects.get(pk=job_id).status == "running"


def test_poison_pill_ends_failed_after_max_attempts_with_every_reason(backend):
    job_id = poison.enqueue(1).id  # max_attempts=2
    claim_and_let_expire(job_id, "victim-1")
    assert [job.status for job in recover()] == ["retrying"]
    wait_until_due(job_id)
    claim_and_let_expire(job_id, "victim-2")
    assert [job.status for job in recover()] == ["failed"]
    job = Job.objects.get(pk=job_id)
    assert job.status == "failed" and job.finished_at is not None
    assert [error["worker_id"] for error in job.errors] == ["victim-1", "victim-2"]
    assert execute(jobs_sql.claim_by_ids([job_id], worker_id="w", lease_seconds=30)) == []


def test_expired_job_with_cancel_requested_ends_cancelled(backend):
    job_id = quick_retry.enqueue(1).id
    claim_and_let_expire(job_id, "w")
    execute(operator_actions_sql.cancel([job_id]))
    assert [job.status for job in recover()] == ["cancelled"]


def test_concurrent_sweeps_recover_each_job_exactly_once(backend):
    ids = [r.id for r in backend.enqueue_many([(quick_retry, (i,), {}) for i in range(40)])]
    execute(jobs_sql.claim_by_ids(ids, worker_id="gone", lease_seconds=0.1))

    time.sleep(0.2)
    swept = run_in_threads(4, lambda i: recover())
    all_swept = [job.id for batch in swept for job in batch]
    assert sorted(map(str, all_swept)) == sorted(ids)
    assert {len(errors) for errors in Job.objects.values_list("errors", flat=True)} == {1}


def test_recover_is_bounded_by_its_batch_size(backend):
    ids = [r.id for r in backend.enqueue_many([(quick_retry, (i,), {}) for i in range(5)])]
    execute(jobs_sql.claim_by_ids(ids, worker_id="gone", lease_seconds=0.05))

    time.sleep(0.1)
    assert len(execute(jobs_sql.recover_expired(limit=2, backoff_cap_seconds=1))) == 2
    assert Job.objects.filter(status="running").count() == 3


def test_stale_due_jobs_lists_unclaimed_due_jobs_for_resignalling(backend):
    job_id = add.enqueue(1, 2).id
    assert execute(jobs_sql.stale_due_jobs(older_than_seconds=3600, limit=10)) == []
    rows = execute(jobs_sql.stale_due_jobs(older_than_seconds=0, limit=10))
    assert [(str(row["id"]), row["queue_name"]) for row in rows] == [(job_id, "default")]
