"""Crash tests: real runworkers processes, real PostgreSQL and Redis, SIGKILL/SIGSTOP/SIGTERM.

Every crash-test job records each execution (``Execution``) before it works, and writes its
receipt and completion in one fenced transaction (``Receipt``), so the tests count lost jobs,
re-runs and double commits.
"""

import os
import random
import signal
import time
from collections import Counter

import pytest
import redis
from django.db import connection
from django.test import override_settings

from django_leasequeue.models import Job
from tests.acceptance.harness import (
    assert_every_job_committed_exactly_once,
    enqueue_work,
    unfinished,
    wait_until,
)
from tests.support.models import Execution, Receipt
from tests.support.servers import RedisServer
from tests.support.tasks.basic import async_sleep, kill_my_process, recorded_work

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.crash,
    pytest.mark.django_independent,
]


def db_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def test_kill_9_one_worker_process_repeatedly(start_workers):
    ids = enqueue_work(240)
    workers = start_workers("--processes", "2", "--concurrency", "10")
    workers.wait_for_children(2)
    kills = 0
    deadline = time.monotonic() + 50
    while unfinished() and time.monotonic() < deadline:
        time.sleep(0.7)
        children = workers.children()
        if children and kills < 6:
            victim = random.choice(children)
            try:
                os.kill(victim, signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
    wait_until(lambda: unfinished() == 0, 30, "every job to finish")
    counts = assert_every_job_committed_exactly_once(ids)
    assert kills >= 3
    assert "killed by SIGKILL" in workers.log()
    print(f"kill -9 x{kills}: {counts}")


def test_kill_9_the_whole_command_then_start_again(start_workers):
    ids = enqueue_work(200)
    first = start_workers("--processes", "2", "--concurrency", "10")
    wait_until(lambda: Receipt.objects.count() >= 30, 30, "some jobs to finish")
    first.kill_all()
    assert unfinished() > 0
    start_workers("--processes", "2", "--concurrency", "10")
    wait_until(lambda: unfinished() == 0, 40, "every job to finish after the restart")
    print(f"whole command killed: {assert_every_job_committed_exactly_once(ids)}")


def test_redis_flushall_and_restart_mid_run(start_workers):
    with RedisServer() as server, override_settings(CACHES=server.caches()):
        ids = enqueue_work(60)
        start_workers("--processes", "2", "--concurrency", "10", redis_url=server.url)
        ids += enqueue_work(60)
        redis.Redis(port=server.port).flushall()
        ids += enqueue_work(60)
        server.stop()
        ids += enqueue_work(60)  # enqueue while Redis is down: must not fail
        time.sleep(1.0)
        ids += enqueue_work(60)
        server.start()
        time.sleep(6)  # the backend's pause after a failed push is over
        ids += enqueue_work(60)
        wait_until(lambda: unfinished() == 0, 40, "every job to finish")
    counts = Counter(Job.objects.values_list("status", flat=True))
    assert counts == {"succeeded": 360}
    assert set(Counter(Receipt.objects.values_list("job_id", flat=True)).values()) == {1}


def test_postgres_connections_terminated_mid_run(start_workers):
    ids = enqueue_work(200)
    workers = start_workers("--processes", "2", "--concurrency", "10")
    terminated = 0
    for _ in range(3):
        wait_until(lambda: Receipt.objects.count() > 0, 30, "progress")
        time.sleep(0.5)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            terminated += cursor.fetchone()[0]
    wait_until(lambda: unfinished() == 0, 40, "every job to finish")
    counts = assert_every_job_committed_exactly_once(ids)
    assert terminated >= 3
    assert "PostgreSQL: connection" in workers.log()  # the outage log's first line
    print(f"{terminated} backends terminated: {counts}")


def test_stopped_worker_cannot_overwrite_the_job_it_lost(start_workers):
    job_id = recorded_work.enqueue(7, 2500).id
    stale = start_workers("--concurrency", "1")
    [stale_pid] = stale.wait_for_children(1)
    wait_until(lambda: Execution.objects.filter(job_id=job_id).exists(), 20, "the first run")

    os.kill(stale_pid, signal.SIGSTOP)
    try:
        rescuer = start_workers("--concurrency", "1")
        [rescuer_pid] = rescuer.wait_for_children(1)
        wait_until(lambda: Job.objects.get(pk=job_id).status == "succeeded", 30, "takeover")
    finally:
        os.kill(stale_pid, signal.SIGCONT)
    # The stale worker wakes up and finds its lease lost (its log); its task's thread finishes
    # its sleep and tries to commit, which the fence refuses: no receipt of its own.
    wait_until(
        lambda: "lease lost" in stale.log().lower() or "no longer held" in stale.log(),
        30,
        "the stale worker to find its lease lost",
    )
    time.sleep(4)  # the rest of the task's 2.5 s sleep, then its attempt to commit
    job = Job.objects.get(pk=job_id)
    assert job.status == "succeeded" and job.result == 7
    assert list(Receipt.objects.values_list("written_by", flat=True)) == [str(rescuer_pid)]
    assert list(Execution.objects.order_by("id").values_list("pid", flat=True)) == [
        stale_pid,
        rescuer_pid,
    ]


def test_sigterm_lets_short_jobs_finish_within_grace(start_workers):
    ids = [async_sleep.enqueue(1.0).id for _ in range(5)]
    workers = start_workers("--concurrency", "10", "--grace", "10")
    wait_until(lambda: Job.objects.filter(status="running").count() == 5, 20, "jobs running")
    workers.signal(signal.SIGTERM)
    assert workers.process.wait(20) == 0
    jobs = Job.objects.filter(pk__in=ids)
    assert {(job.status, job.attempt, len(job.worker_ids)) for job in jobs} == {("succeeded", 1, 1)}


def test_sigterm_releases_long_jobs_for_another_worker_at_once(start_workers):
    # Jobs long enough to outlast the rescuer's start-up on a loaded machine, short of the lease.
    ids = [async_sleep.enqueue(15.0).id for _ in range(4)]
    leaving = start_workers("--concurrency", "10", "--grace", "0.5", options={"lease_seconds": 60})
    leaving_children = leaving.wait_for_children(1)
    wait_until(lambda: Job.objects.filter(status="running").count() == 4, 20, "jobs running")
    rescuer = start_workers("--concurrency", "10", options={"lease_seconds": 60})
    # Measured from a rescuer that is up: its start-up is not what this test is about.
    wait_until(lambda: "queues=default" in rescuer.log(), 12, "the rescuer to start")
    # Where the leaving worker's leases end (their heartbeats only move them later).
    leases = dict(Job.objects.filter(pk__in=ids).values_list("id", "lease_expires_at"))
    leaving.signal(signal.SIGTERM)
    assert leaving.process.wait(10) == 0
    wait_until(lambda: unfinished() == 0, 90, "the released jobs to finish elsewhere")
    leaving_pids = set(leaving_children)
    for job in Job.objects.filter(pk__in=ids):
        # Claimed again before the 60 s lease it was released from would have ended.
        assert job.last_attempted_at < leases[job.id], (job.last_attempted_at, leases[job.id])
        assert job.status == "succeeded" and job.attempt == 1 and job.errors == []
        assert len(job.worker_ids) == 1  # the released attempt is not counted
        assert job.result not in leaving_pids  # async_sleep returns the pid that ran it


def test_poison_pill_ends_failed_and_the_supervisor_keeps_going(start_workers):
    pill = kill_my_process.enqueue().id  # max_attempts=3
    workers = start_workers("--concurrency", "2")
    wait_until(lambda: Job.objects.get(pk=pill).status == "failed", 45, "the pill to fail")
    job = Job.objects.get(pk=pill)
    assert [e["exception_class_path"] for e in job.errors] == [
        "django_leasequeue.exceptions.LeaseExpired"
    ] * 3
    assert workers.process.poll() is None
    assert workers.log().count("died (exit status 3)") == 3
    healthy = recorded_work.enqueue(1, 10).id
    wait_until(lambda: Job.objects.get(pk=healthy).status == "succeeded", 20, "a normal job")


def test_a_second_sigterm_stops_at_once_and_releases_the_jobs(start_workers):
    ids = [async_sleep.enqueue(30.0).id for _ in range(3)]
    workers = start_workers("--concurrency", "10", "--grace", "60", options={"lease_seconds": 60})
    wait_until(lambda: Job.objects.filter(status="running").count() == 3, 20, "jobs running")
    workers.signal(signal.SIGTERM)
    time.sleep(0.5)
    assert workers.process.poll() is None  # the first signal waits for the 60 s grace
    stopped_at = time.monotonic()
    workers.signal(signal.SIGTERM)
    workers.process.wait(45)
    # Well within the 60 s grace the first signal waits for (and the jobs' 30 s); the margin is
    # for a loaded machine, where a stop at once still takes seconds.
    assert time.monotonic() - stopped_at < 25
    jobs = Job.objects.filter(pk__in=ids)
    assert {(job.status, job.attempt, len(job.worker_ids)) for job in jobs} == {("retrying", 0, 0)}


def test_one_sigterm_to_the_whole_process_group_is_one_graceful_stop(start_workers):
    """systemd's default KillMode=control-group sends SIGTERM to every process of the service:
    each worker gets it from systemd and again from the supervisor, and that is still one stop
    request. A job 3 s from done finishes instead of being released."""
    job_id = async_sleep.enqueue(3.0).id
    workers = start_workers("--concurrency", "2", "--grace", "30", options={"lease_seconds": 60})
    wait_until(lambda: Job.objects.get(pk=job_id).status == "running", 20, "the job to run")
    os.killpg(workers.process.pid, signal.SIGTERM)
    assert workers.process.wait(30) == 0
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.attempt) == ("succeeded", 1)
    assert "Stopping now" not in workers.log()


def test_a_worker_process_seen_dying_hands_its_jobs_on_within_seconds_not_a_lease(
    start_workers,
):
    """The supervisor ends the leases of a child it saw die (kill -9): with 60 s leases, its
    jobs run again long before those leases would have ended."""
    ids = [async_sleep.enqueue(30.0).id for _ in range(2)]
    workers = start_workers("--concurrency", "10", options={"lease_seconds": 60})
    wait_until(lambda: Job.objects.filter(pk__in=ids, status="running").count() == 2, 20, "jobs")
    [child] = workers.wait_for_children(1)
    # Where the killed worker's leases end (no heartbeat moves them once it is dead).
    leases = dict(Job.objects.filter(pk__in=ids).values_list("id", "lease_expires_at"))
    killed_at = db_now()
    os.kill(child, signal.SIGKILL)
    wait_until(
        lambda: Job.objects.filter(pk__in=ids, status="running", attempt=2).count() == 2,
        50,
        "the jobs to run again",
    )
    for job in Job.objects.filter(pk__in=ids):
        assert job.last_attempted_at < leases[job.id], (job.last_attempted_at, leases[job.id])
        print(f"running again {(job.last_attempted_at - killed_at).total_seconds():.1f} s after")
    assert "Ended 2 lease(s) of dead worker" in workers.log()
