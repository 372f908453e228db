"""A worker whose own service (here: the heartbeat) dies from an unexpected error exits, so that
the supervisor starts a healthy one: a worker without heartbeats must not go on claiming.

The fault is real, not mocked: a trigger makes PostgreSQL reject lease renewals (and only them)
with an error the worker does not expect."""

import pytest
from django.db import connection

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.tasks import async_sleep

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

# Renewals are the only updates that move heartbeat_at of a running job and keep its lease.
_REJECT_RENEWALS = """
CREATE FUNCTION leasequeue_test_reject_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'running' AND NEW.status = 'running'
       AND NEW.lease_version = OLD.lease_version
       AND NEW.heartbeat_at IS DISTINCT FROM OLD.heartbeat_at THEN
        RAISE EXCEPTION 'injected fault: lease renewals are rejected';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER leasequeue_test_reject_renewal BEFORE UPDATE ON leasequeue_job
FOR EACH ROW EXECUTE FUNCTION leasequeue_test_reject_renewal();
"""
_ACCEPT_RENEWALS = """
DROP TRIGGER IF EXISTS leasequeue_test_reject_renewal ON leasequeue_job;
DROP FUNCTION IF EXISTS leasequeue_test_reject_renewal();
"""


@pytest.fixture
def renewals_rejected():
    """Call it to make PostgreSQL reject renewals; accepting them again is ``.accept()``."""

    class Fault:
        def reject(self) -> None:
            with connection.cursor() as cursor:
                cursor.execute(_REJECT_RENEWALS)

        def accept(self) -> None:
            with connection.cursor() as cursor:
                cursor.execute(_ACCEPT_RENEWALS)

    fault = Fault()
    yield fault
    fault.accept()


@pytest.mark.django_independent
def test_a_worker_whose_heartbeat_dies_exits_and_a_new_one_finishes_the_job(
    start_workers, renewals_rejected
):
    job_id = async_sleep.enqueue(3.0).id
    workers = start_workers("--concurrency", "2")
    [first] = workers.wait_for_children(1)
    wait_until(lambda: Job.objects.get(pk=job_id).status == "running", 20, "the job to run")
    renewals_rejected.reject()
    wait_until(
        lambda: "The worker's heartbeat service died" in workers.log(), 20, "the heartbeat to die"
    )
    renewals_rejected.accept()
    wait_until(lambda: "died (exit status 1)" in workers.log(), 20, "the supervisor to see it exit")
    wait_until(lambda: set(workers.children()) - {first}, 20, "a new worker process")
    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "the job to finish")
    job = Job.objects.get(pk=job_id)
    assert job.result != first  # async_sleep returns the pid that ran it to the end
    assert first not in workers.children()
    assert "injected fault: lease renewals are rejected" in workers.log()
