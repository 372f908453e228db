"""A worker whose lease renewals PostgreSQL refuses (an error, not silence) stays up: each job
stops itself before its lease can end, as under a partition, and runs again once renewals go
through. (A service that dies of a bug still ends the worker: see ``Worker.run``.)

The fault is real, not mocked: a trigger makes PostgreSQL reject lease renewals (and only them)."""

import pytest
from django.db import connection

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import async_sleep

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
def test_refused_renewals_stop_the_job_before_its_lease_ends_and_the_worker_stays_up(
    start_workers, renewals_rejected
):
    job_id = async_sleep.enqueue(3.0).id
    workers = start_workers("--concurrency", "2")
    [child] = workers.wait_for_children(1)
    wait_until(lambda: Job.objects.get(pk=job_id).status == "running", 20, "the job to run")
    renewals_rejected.reject()
    # Stopped at its own deadline, by either check: the deadline passing between renewals, or
    # (on a loaded machine) the last renewal before the deadline not answered in time.
    wait_until(
        lambda: any(
            line in workers.log()
            for line in (
                "lease not renewed in time; stopping it",
                "did not confirm lease renewals in time: stopping 1 job(s)",
            )
        ),
        20,
        "the job to be stopped at its own deadline",
    )
    renewals_rejected.accept()
    wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "the job to finish")
    job = Job.objects.get(pk=job_id)
    assert job.attempt == 2  # the first attempt stopped itself; the sweep queued it again
    assert workers.children() == [child]  # no service died, no restart
    log = workers.log()
    assert "Lease renewal failed (RaiseException: injected fault" in log
    assert "service died" not in log
