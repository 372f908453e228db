"""Stopping workers: what a job finishing during the shutdown drain still gets, and how long a
stop takes when PostgreSQL does not answer. Real runworkers processes."""

import os
import re
import signal
import time

import pytest
from django.db import connection

from django_leasequeue.models import Job
from django_leasequeue.runtime.shutdown import STOP_SECONDS
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.proxy import PartitionableProxy
from tests.support.servers import free_port
from tests.support.signal_log import ENV_VAR
from tests.support.tasks.basic import async_sleep

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def test_a_job_finishing_during_the_shutdown_drain_sends_task_finished(
    start_workers, tmp_path, monkeypatch
):
    signal_log = tmp_path / "signals.log"
    monkeypatch.setenv(ENV_VAR, str(signal_log))
    ids = [async_sleep.enqueue(1.5).id for _ in range(6)]
    workers = start_workers("--concurrency", "10", "--grace", "20", options={"lease_seconds": 30})
    wait_until(lambda: Job.objects.filter(status="running").count() == 6, 20, "jobs running")
    workers.signal(signal.SIGTERM)
    assert workers.process.wait(30) == 0
    assert set(Job.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"succeeded"}
    lines = signal_log.read_text().splitlines()
    finished = sorted(line.split()[1] for line in lines if line.startswith("finished"))
    assert finished == sorted(ids), lines
    assert {line.split()[2] for line in lines if line.startswith("finished")} == {"SUCCESSFUL"}


@pytest.fixture
def partitionable_database():
    """A PartitionableProxy in front of the test database, and the URL that goes through it."""
    settings = connection.settings_dict
    proxy = PartitionableProxy((settings["HOST"], int(settings["PORT"]))).start()
    url = harness.test_database_url().replace(
        f"@{settings['HOST']}:{settings['PORT']}/", f"@127.0.0.1:{proxy.port}/"
    )
    yield proxy, url
    proxy.heal()
    proxy.stop()


# A stop with PostgreSQL silent takes the grace, then at most STOP_SECONDS for the stopped jobs,
# STOP_SECONDS for the batchers and a few UNWIND_SECONDS (runtime.shutdown); the rest of the
# bound is for a loaded 2-core machine (process exit, the supervisor's 0.2 s reaping tick).
_STOP_MARGIN_SECONDS = 2 * STOP_SECONDS + 4


@pytest.mark.django_independent
def test_a_stop_while_postgresql_does_not_answer_ends_within_the_grace(
    start_workers, partitionable_database
):
    """PostgreSQL silent (packets dropped, sockets open): the jobs that finish cannot be
    recorded, the ones still running cannot be released. The stop still ends in bounded time,
    each stop message is logged once, and every job runs to the end later elsewhere."""
    proxy, behind_proxy = partitionable_database
    grace = 2.0
    short = [async_sleep.enqueue(1.0).id for _ in range(3)]
    # Long enough to be running still when the stop gives up (grace + 2 * STOP_SECONDS).
    long = [async_sleep.enqueue(12.0).id for _ in range(3)]
    workers = start_workers(
        "--concurrency",
        "10",
        "--grace",
        str(grace),
        options={"lease_seconds": 20, "heartbeat_seconds": 1},
        database_url=behind_proxy,
    )
    wait_until(lambda: Job.objects.filter(status="running").count() == 6, 20, "jobs running")
    proxy.partition()
    stopped_at = time.monotonic()
    workers.signal(signal.SIGTERM)
    workers.process.wait(grace + 60)
    took = time.monotonic() - stopped_at
    print(f"stop with PostgreSQL silent: {took:.1f} s (grace {grace} s)")
    assert took < grace + _STOP_MARGIN_SECONDS
    log = workers.log()
    assert log.count("SIGTERM: stopping workers gracefully") == 1
    assert log.count("Stopping: no new claims") == 1
    assert "Stopping: gave up" in log  # the bounded steps did run into PostgreSQL's silence
    proxy.heal()
    start_workers("--concurrency", "10", options={"lease_seconds": 20, "heartbeat_seconds": 1})
    wait_until(
        lambda: Job.objects.filter(pk__in=short + long, status="succeeded").count() == 6,
        90,
        "every job to succeed after the leases of the stopped worker expired",
    )


@pytest.mark.django_independent
def test_a_second_stop_kills_a_worker_that_does_not_stop_and_says_so_once(start_workers):
    """A worker process that does not react (here: SIGSTOP) is killed 10 s after the second
    stop signal; the supervisor logs that once, not once per 0.2 s tick."""
    async_sleep.enqueue(30.0)
    workers = start_workers("--concurrency", "2", "--grace", "60", options={"lease_seconds": 60})
    [child] = workers.wait_for_children(1)
    wait_until(lambda: Job.objects.filter(status="running").exists(), 20, "the job to run")
    os.kill(child, signal.SIGSTOP)
    workers.signal(signal.SIGTERM)
    time.sleep(0.5)
    workers.signal(signal.SIGTERM)
    workers.process.wait(30)
    assert workers.log().count("Worker process 0 did not stop; killing it.") == 1


@pytest.mark.django_independent
def test_a_worker_waiting_for_postgresql_at_start_up_stops_at_once(start_workers):
    """PostgreSQL down when the workers start (nothing listens on its port): they wait for it,
    which is not a failed start-up, and a stop request ends that wait."""
    nowhere = harness.test_database_url().replace(
        f":{connection.settings_dict['PORT']}/", f":{free_port()}/"
    )
    workers = start_workers("--processes", "2", "--grace", "30", database_url=nowhere)
    first_failure = "PostgreSQL: cannot connect ("
    wait_until(lambda: workers.log().count(first_failure) == 2, 30, "each process's first failure")
    time.sleep(6)  # several more attempts each (at most 2 s apart): not one line per attempt
    assert workers.log().count(first_failure) == 2, workers.log()
    assert workers.process.poll() is None  # waiting, not giving up
    stopped_at = time.monotonic()
    workers.signal(signal.SIGTERM)
    assert workers.process.wait(20) == 0
    took = time.monotonic() - stopped_at
    print(f"stop of workers waiting for PostgreSQL: {took:.1f} s")
    # Far from the 30 s grace and from PostgreSQL's return: the stop ended the wait; the margin
    # is for a loaded machine, where three processes take seconds to exit.
    assert took < 15
    log = workers.log()
    assert "could not start" not in log
    # How long each process really tried, not the 0 s the stop itself waited.
    tried = re.findall(r"first answer after (\d+) s of trying", log)
    assert len(tried) == 2 and all(int(seconds) >= 6 for seconds in tried), log


@pytest.mark.django_independent
def test_a_stop_while_the_worker_processes_start_stops_every_one(start_workers):
    """SIGTERM as soon as the first of 4 processes exists, while the supervisor starts the
    others: a process started as the signal arrived is told to stop too, and runworkers exits
    0 within seconds (it once waited for ever on a process nobody had asked to stop)."""
    for _ in range(3):
        workers = start_workers("--processes", "4", "--concurrency", "2")
        wait_until(lambda workers=workers: workers.children(), 20, "a first worker process")
        workers.signal(signal.SIGTERM)
        assert workers.process.wait(20) == 0, workers.log()
        assert not workers.children()
