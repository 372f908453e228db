"""Fencing: a worker whose lease was taken over can write nothing; the new holder can."""

import pytest

from django_leasequeue.exceptions import LeaseLost
from django_leasequeue.fencing import fenced_atomic
from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_and_let_expire, claim_one, recover, snapshot, wait_until_due
from tests.support.models import Receipt
from tests.support.tasks.basic import quick_retry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def taken_over_job(backend):
    """Worker A claimed the job and lost its lease; worker B now holds it."""
    job_id = quick_retry.enqueue(7).id
    stale = claim_and_let_expire(job_id, "worker-a")
    assert [job.status for job in recover()] == ["retrying"]
    wait_until_due(job_id)
    current = claim_one(job_id, "worker-b")
    assert current.lease.lease_version == stale.lease.lease_version + 1
    return stale, current


def _fail(lease):
    return jobs_sql.fail(
        lease,
        exception_class_path="builtins.ValueError",
        message="stale",
        traceback="",
        retryable=True,
        backoff_cap_seconds=60,
    )


def test_stale_worker_writes_are_all_rejected_and_change_nothing(taken_over_job):
    stale, current = taken_over_job
    before = snapshot(current.id)

    assert execute(jobs_sql.complete(stale.lease, "stale result")) is False
    assert execute(_fail(stale.lease)) is None
    assert execute(jobs_sql.progress(stale.lease, 5, 10, "stale")) is False
    assert execute(jobs_sql.checkpoint(stale.lease, '{"step": 99}')) is False
    assert execute(jobs_sql.hand_back(stale.lease)) is False
    assert execute(jobs_sql.finish_cancelled(stale.lease)) is False
    assert execute(jobs_sql.heartbeat([stale.lease], lease_seconds=30)).held == set()
    with pytest.raises(LeaseLost), fenced_atomic(stale.lease):
        Receipt.objects.create(job_id=stale.id, written_by="worker-a")

    assert Receipt.objects.count() == 0
    assert snapshot(current.id) == before

    assert execute(jobs_sql.progress(current.lease, 10, 10, "done")) is True
    with fenced_atomic(current.lease) as fence:
        Receipt.objects.create(job_id=current.id, written_by="worker-b")
        fence.complete({"by": "worker-b"})
    job = Job.objects.get(pk=current.id)
    assert (job.status, job.result, job.progress["message"]) == (
        "succeeded",
        {"by": "worker-b"},
        "done",
    )
    assert list(Receipt.objects.values_list("written_by", flat=True)) == ["worker-b"]


def test_fenced_block_that_raises_rolls_back_user_writes_and_completion(backend):
    claimed = claim_one(quick_retry.enqueue(1).id, "worker-a")
    with pytest.raises(RuntimeError), fenced_atomic(claimed.lease) as fence:
        Receipt.objects.create(job_id=claimed.id, written_by="worker-a")
        fence.complete("done")
        raise RuntimeError("business rule broken")
    assert Receipt.objects.count() == 0
    assert Job.objects.get(pk=claimed.id).status == "running"


def test_the_deprecated_using_names_still_reach_the_database(backend):
    """``database`` names the alias; ``using=`` of ``fenced_atomic`` and ``fence.using`` stay
    working, with a DeprecationWarning."""
    claimed = claim_one(quick_retry.enqueue(1).id, "worker-a")
    with pytest.warns(DeprecationWarning, match="database="):
        fenced = fenced_atomic(claimed.lease, using="default")
    with fenced as fence:
        with pytest.warns(DeprecationWarning, match="FencedTransaction.database"):
            assert fence.using == "default"
        fence.complete("done")
    assert Job.objects.get(pk=claimed.id).status == "succeeded"


def test_heartbeat_answers_per_lease_in_one_statement(backend):
    kept, lost, cancelled = (claim_one(quick_retry.enqueue(i).id, "w") for i in range(3))
    Job.objects.filter(pk=lost.id).update(lease_version=99)  # another claim took it
    execute(operator_actions_sql.cancel([cancelled.id]))
    reply = execute(jobs_sql.heartbeat([kept.lease, lost.lease, cancelled.lease], lease_seconds=30))
    assert reply.held == {kept.id, cancelled.id}
    assert reply.cancel_requested == {cancelled.id}
