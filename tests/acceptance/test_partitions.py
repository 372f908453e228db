"""Faults that are not crashes: a silent partition between a worker and PostgreSQL, and an
operator holding a job's row lock. Real runworkers processes, a real TCP proxy."""

import contextlib
import time
from datetime import timedelta
from itertools import pairwise

import pytest
from django.db import connection, connections

from django_leasequeue.models import Job
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.proxy import PartitionableProxy
from tests.support.tasks.basic import add, async_sleep, stays_alive

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.crash,
    pytest.mark.django_independent,
]

LEASE = {"lease_seconds": 3, "heartbeat_seconds": 0.5, "sweep_seconds": 0.3}


@pytest.fixture
def alive_marks(monkeypatch):
    """The table jobs mark themselves alive in, and the direct address they write it through."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE alive_mark (job_id uuid, execution text, "
            "at timestamptz DEFAULT clock_timestamp())"
        )
    monkeypatch.setenv("LEASEQUEUE_ALIVE_DSN", harness.test_database_url())
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE alive_mark")


def _executions() -> dict[str, list[tuple[str, object, object]]]:
    """Per job: each execution's first and last alive mark, in order of start."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id::text, execution, min(at), max(at) FROM alive_mark "
            "GROUP BY job_id, execution ORDER BY job_id, min(at)"
        )
        rows = cursor.fetchall()
    executions: dict[str, list] = {}
    for job_id, execution, first, last in rows:
        executions.setdefault(job_id, []).append((execution, first, last))
    return executions


def test_a_silently_partitioned_worker_stops_its_jobs_before_another_takes_them(
    start_workers, alive_marks
):
    settings = connection.settings_dict
    proxy = PartitionableProxy((settings["HOST"], int(settings["PORT"]))).start()
    behind_proxy = harness.test_database_url().replace(
        f"@{settings['HOST']}:{settings['PORT']}/", f"@127.0.0.1:{proxy.port}/"
    )
    try:
        partitioned = start_workers("--concurrency", "5", options=LEASE, database_url=behind_proxy)
        ids = [stays_alive.enqueue(7).id for _ in range(5)]
        wait_until(
            lambda: Job.objects.filter(pk__in=ids, status="running").count() == 5,
            20,
            "the partitioned worker to run every job",
        )
        time.sleep(0.5)
        proxy.partition()
        rescuer = start_workers("--concurrency", "5", options=LEASE)
        wait_until(
            lambda: Job.objects.filter(pk__in=ids, attempt__gte=2).count() == 5,
            30,
            "the rescuer to take every job over",
        )
        proxy.heal()
        wait_until(
            lambda: Job.objects.filter(pk__in=ids, status="succeeded").count() == 5,
            30,
            "every job to succeed",
        )
        executions = _executions()
        gaps = []
        for job_id in ids:
            runs = executions[job_id]
            assert len(runs) >= 2, f"{job_id} ran once: the partition changed nothing"
            for (_, _, before_last), (_, after_first, _) in pairwise(runs):
                gaps.append(after_first - before_last)
        print(f"smallest gap between two executions of one job: {min(gaps)}")
        assert min(gaps) > timedelta(0), "two executions of one job overlapped in time"
        assert "did not confirm lease renewals in time" in partitioned.log()

        # Healed, the partitioned worker goes on by itself, without a restart.
        rescuer.stop()
        wait_until(
            lambda: "PostgreSQL answers again" in partitioned.log(), 30, "the worker to recover"
        )
        after = add.enqueue(2, 2).id
        wait_until(lambda: Job.objects.get(pk=after).status == "succeeded", 30, "a new job")
        assert partitioned.process.poll() is None
    finally:
        proxy.heal()
        with contextlib.suppress(Exception):
            proxy.stop()


# Long enough that a busy machine's pause (a CI run, a CPU hog on every core: over 2.2 s seen) does
# not fence the worker by itself; a heartbeat blocked by the row lock still would, within 4.5 s.
LEASE_UNDER_LOCK = {"lease_seconds": 5, "heartbeat_seconds": 0.5, "sweep_seconds": 0.3}


def test_an_operator_holding_one_row_lock_does_not_stall_the_other_leases(start_workers):
    """A row lock held for several leases (an admin action in a long transaction) must not hold
    up the heartbeat of the worker's other jobs."""
    locked, others = async_sleep.enqueue(12).id, [async_sleep.enqueue(12).id for _ in range(3)]
    workers = start_workers("--concurrency", "5", options=LEASE_UNDER_LOCK)
    wait_until(lambda: Job.objects.filter(status="running").count() == 4, 20, "four running jobs")
    holder = connections.create_connection("default")
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute("SELECT id FROM leasequeue_job WHERE id = %s FOR UPDATE", [locked])
            time.sleep(2 * LEASE_UNDER_LOCK["lease_seconds"])  # two leases long
        holder.rollback()
    finally:
        holder.close()
    wait_until(
        lambda: not Job.objects.filter(pk__in=others, status="running").exists(),
        30,
        "the other jobs to end",
    )
    for job in Job.objects.filter(pk__in=others):
        assert (job.status, job.attempt) == ("succeeded", 1), "a lease of another job was lost"
    assert workers.process.poll() is None
