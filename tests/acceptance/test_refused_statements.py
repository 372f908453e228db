"""Each batched statement of a worker, refused once by PostgreSQL, costs only that statement: the
worker stays up and every job still succeeds on its first attempt (issue #20).

The faults are real: a trigger raises once for each kind of update, counted by sequences
(``nextval`` is not undone when the statement that called it fails)."""

import pytest
from django.db import connection

from django_leasequeue.models import Job
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import add, async_sleep
from tests.support.tasks.values import limited_sleep

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

STATEMENTS = ("claim_batch", "claim_by_ids", "flow_claim", "heartbeat", "complete_many")

_INSTALL = """
CREATE FUNCTION leasequeue_test_fault() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    statement text;
BEGIN
    IF OLD.status IN ('queued', 'retrying') AND NEW.status = 'running' THEN
        statement := CASE WHEN current_query() ILIKE '%%skip locked%%'
                               OR current_query() ILIKE '%%leasequeue_claim_batch%%'
                          THEN 'claim_batch'
                          WHEN NEW.flow_key IS NOT NULL THEN 'flow_claim'
                          ELSE 'claim_by_ids' END;
    ELSIF OLD.status = 'running' AND NEW.status = 'running'
          AND NEW.lease_version = OLD.lease_version
          AND NEW.heartbeat_at IS DISTINCT FROM OLD.heartbeat_at THEN
        statement := 'heartbeat';
    ELSIF OLD.status = 'running' AND NEW.status = 'succeeded' THEN
        statement := 'complete_many';
    END IF;
    IF statement IS NOT NULL AND nextval('leasequeue_test_fault_' || statement) = 1 THEN
        RAISE EXCEPTION 'injected fault: % refused once', statement;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER leasequeue_test_fault BEFORE UPDATE ON leasequeue_job
FOR EACH ROW EXECUTE FUNCTION leasequeue_test_fault();
"""
_REMOVE = """
DROP TRIGGER IF EXISTS leasequeue_test_fault ON leasequeue_job;
DROP FUNCTION IF EXISTS leasequeue_test_fault();
"""


@pytest.fixture
def refused_once():
    """Arms one refusal of each statement; yields how many times each was tried since."""
    with connection.cursor() as cursor:
        for statement in STATEMENTS:
            cursor.execute(f"CREATE SEQUENCE leasequeue_test_fault_{statement}")
        cursor.execute(_INSTALL)

    def tries() -> dict[str, int]:
        with connection.cursor() as cursor:
            counts = {}
            for statement in STATEMENTS:
                cursor.execute(
                    f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
                    f"FROM leasequeue_test_fault_{statement}"
                )
                counts[statement] = cursor.fetchone()[0]
            return counts

    yield tries
    with connection.cursor() as cursor:
        cursor.execute(_REMOVE)
        for statement in STATEMENTS:
            cursor.execute(f"DROP SEQUENCE IF EXISTS leasequeue_test_fault_{statement}")


def test_every_batched_statement_refused_once_harms_no_job_and_no_worker(
    start_workers, refused_once, redis_client, backend
):
    # Polled: enqueued before the workers, their wakeups dropped.
    polled = [add.enqueue(i, 1).id for i in range(10)]
    redis_client.delete(backend.wakeups.key("default"))
    limited = [limited_sleep.enqueue(0.2).id for _ in range(4)]  # the flow claim's
    # No wakeup again from the sweep: the polled jobs are the poll claim's alone.
    workers = start_workers(
        "--queues", "*", "--concurrency", "8", options={"resignal_after_seconds": 600}
    )
    [child] = workers.wait_for_children(1)
    wait_until(
        lambda: Job.objects.filter(pk__in=polled, status="succeeded").count() == len(polled),
        20,
        "the polled jobs to succeed",
    )
    # Woken: enqueued while the workers wait on Redis; long enough to be renewed.
    woken = [async_sleep.enqueue(1.0).id for _ in range(3)]
    woken += [add.enqueue(i, 2).id for i in range(10)]

    jobs = [*polled, *limited, *woken]
    wait_until(
        lambda: Job.objects.filter(pk__in=jobs, status="succeeded").count() == len(jobs),
        40,
        "every job to succeed",
    )
    assert set(Job.objects.filter(pk__in=jobs).values_list("attempt", flat=True)) == {1}
    tried = refused_once()
    assert all(count >= 1 for count in tried.values()), tried  # every fault fired
    log = workers.log()
    for statement in STATEMENTS:
        assert f"injected fault: {statement} refused once" in log
    assert workers.children() == [child]
    assert "service died" not in log
    assert "InFailedSqlTransaction" not in log


def test_a_lone_success_refused_once_is_recorded_when_it_goes_again(start_workers, refused_once):
    """A batch of one success refused by a fault that passes goes again, alone: only a success
    refused a second time is failed as a value PostgreSQL cannot store (it was failed at once,
    and a job could fail for a lock timeout)."""
    job_id = add.enqueue(2, 3).id
    workers = start_workers("--concurrency", "1")
    wait_until(
        lambda: Job.objects.get(pk=job_id).status in ("succeeded", "failed"), 30, "the job's end"
    )
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.result, job.attempt, job.errors) == ("succeeded", 5, 1, [])
    assert refused_once()["complete_many"] == 2  # refused, then recorded
    assert "recording each one again, alone" in workers.log()
    assert workers.stop() == 0
