"""``last_error_class``: every statement that records an attempt's error writes its exception
class beside it, which the failures page groups by (``admin/failure_groups.py``)."""

import time

import pytest

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_one
from tests.support.tasks import control as control_tasks
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)


def last_error(job_id) -> tuple[str, str | None, str | None]:
    job = Job.objects.get(pk=job_id)
    recorded = job.errors[-1]["exception_class_path"] if job.errors else None
    return job.status, job.last_error_class, recorded


def test_a_failed_attempt_writes_its_class_retrying_or_failed():
    job_id = add.enqueue(1, 1).id
    claimed = claim_one(job_id, "w")
    execute(
        jobs_sql.fail(
            claimed.lease,
            exception_class_path="app.errors.Flaky",
            message="again",
            traceback="",
            retryable=True,
            backoff_cap_seconds=0,
        )
    )
    assert last_error(job_id) == ("retrying", "app.errors.Flaky", "app.errors.Flaky")
    Job.objects.filter(pk=job_id).update(run_after=Job.objects.get(pk=job_id).enqueued_at)
    claimed = claim_one(job_id, "w")
    execute(
        jobs_sql.fail(
            claimed.lease,
            exception_class_path="builtins.KeyError",
            message="gone",
            traceback="",
            retryable=False,
            backoff_cap_seconds=0,
        )
    )
    assert last_error(job_id) == ("failed", "builtins.KeyError", "builtins.KeyError")


def test_an_expired_lease_on_the_last_attempt_writes_lease_expired():
    job_id = add.enqueue(1, 1).id
    Job.objects.filter(pk=job_id).update(max_attempts=1)
    claim_one(job_id, "vanished", lease_seconds=0.01)
    time.sleep(0.05)
    execute(jobs_sql.recover_expired(limit=10, backoff_cap_seconds=0))
    expired = "django_leasequeue.exceptions.LeaseExpired"
    assert last_error(job_id) == ("failed", expired, expired)


def test_a_job_past_its_expiry_writes_job_expired(backend):
    job_id = control_tasks.expiring.using(expires_after=0.05).enqueue(1).id
    time.sleep(0.1)
    execute(queue_control_sql.expire_jobs(limit=10))
    expired = "django_leasequeue.exceptions.JobExpired"
    assert last_error(job_id) == ("failed", expired, expired)


def test_a_job_whose_next_run_passes_its_expiry_writes_job_expired(backend):
    job_id = control_tasks.expiring.using(expires_after=60).enqueue(1).id
    Job.objects.filter(pk=job_id).update(run_after=Job.objects.get(pk=job_id).expires_at)
    execute(queue_control_sql.expire_doomed([job_id]))
    expired = "django_leasequeue.exceptions.JobExpired"
    assert last_error(job_id) == ("failed", expired, expired)


def test_one_snooze_too_many_writes_too_many_snoozes():
    job_id = add.enqueue(1, 1).id
    claimed = claim_one(job_id, "sleepy")
    assert execute(queue_control_sql.snooze(claimed.lease, 30, max_snoozes=0)).status == "failed"
    too_many = "django_leasequeue.exceptions.TooManySnoozes"
    assert last_error(job_id) == ("failed", too_many, too_many)


def test_a_snooze_within_its_allowance_leaves_the_column_alone():
    job_id = add.enqueue(1, 1).id
    claimed = claim_one(job_id, "sleepy")
    assert execute(queue_control_sql.snooze(claimed.lease, 30, max_snoozes=5)).status == "queued"
    assert last_error(job_id) == ("queued", None, None)
