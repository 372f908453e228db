"""Queue control with real ``runworkers`` processes: a pause holds every worker off a queue and a
resume drains it, expired jobs never run, a stale worker's snooze is refused, and a key held over
a period survives eight processes enqueuing at once. A snooze that is not an attempt, and a retry
set past its job's expiry, are shown in the test's own process by the testing drain
(tests/integration/test_drained_outcomes.py)."""

import json
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max
from django.urls import reverse
from django_redis import get_redis_connection
from prometheus_client.parser import text_string_to_metric_families

from django_leasequeue.models import Job
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.models import Execution
from tests.support.tasks import control as control_tasks
from tests.support.tasks.basic import add, async_sleep

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def alive_workers() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM leasequeue_worker WHERE stopped_at IS NULL "
            "AND heartbeat_at >= now() - make_interval(secs => lease_seconds)"
        )
        return cursor.fetchone()[0]


def db_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def statuses(ids) -> dict[str, int]:
    """How many of these jobs are in each status: counted by PostgreSQL, the ids one array
    (the ORM's ``pk__in`` of 20,000 ids, polled every 50 ms, was most of a test process's CPU)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, count(*) FROM leasequeue_job"
            " WHERE id = ANY(%s::uuid[]) GROUP BY status",
            [[str(job_id) for job_id in ids]],
        )
        return dict(cursor.fetchall())


# Pausing


def test_a_paused_queue_waits_with_idle_workers_and_drains_at_once_when_resumed(
    start_workers, backend
):
    """Paused: 3 worker processes stay idle for 5 s, through a Redis flush and a restart of
    the workers; resumed: every job runs, the first claimed at once (by the database's
    clock)."""
    backend.pause_queue("other", "incident")
    workers = start_workers("--processes", "3", "--queues", "*", "--concurrency", "10")
    wait_until(lambda: alive_workers() == 3, 30, "three worker processes")
    ids = [control_tasks.recorded.using(queue_name="other").enqueue(n).id for n in range(60)]
    control_tasks.recorded.enqueue(-1)  # another queue keeps running meanwhile
    wait_until(lambda: Execution.objects.count() == 1, 10, "the open queue's job")

    paused_for = time.monotonic()
    time.sleep(2)
    # Redis loss keeps the pause: every key of this test run's prefix goes (FLUSHDB would take
    # those of tests running beside it in the same Redis database).
    redis = get_redis_connection(backend.config.redis_alias)
    if keys := redis.keys(f"{settings.KEY_PREFIX}[:-]*"):
        redis.delete(*keys)
    workers.stop()
    workers = start_workers("--processes", "3", "--queues", "*", "--concurrency", "10")
    wait_until(lambda: alive_workers() == 3, 30, "three restarted worker processes")
    time.sleep(max(0.0, 5 - (time.monotonic() - paused_for)))
    assert statuses(ids) == {"queued": 60}
    assert Execution.objects.count() == 1

    resumed_at = db_now()
    assert backend.resume_queue("other") is True
    wait_until(lambda: statuses(ids) == {"succeeded": 60}, 60, "the resumed queue drained")
    assert Execution.objects.count() == 61
    claims = sorted(Job.objects.filter(pk__in=ids).values_list("last_attempted_at", flat=True))
    assert claims[0] > resumed_at  # nothing of the queue started while it was paused
    # The resume wakes the workers for its jobs (polls are 0.3 s apart): a worker that kept the
    # queue paused would claim nothing. 5 s leaves a loaded machine's stalls room (2 s seen).
    assert claims[0] - resumed_at < timedelta(seconds=5), claims[0] - resumed_at


def test_once_pause_returns_no_worker_claims_from_the_queue_and_running_jobs_finish(
    start_workers, backend
):
    """A pause in the middle of a drain: nothing of the queue starts from the moment the pause
    returned until the resume (the database's clock), jobs running then finish normally, and
    the rest start after the resume."""
    calls = [(async_sleep.using(queue_name="other"), (0.05,), {}) for _ in range(3000)]
    ids = [result.id for result in backend.enqueue_many(calls)]
    start_workers("--processes", "2", "--queues", "*", "--concurrency", "20")
    wait_until(lambda: statuses(ids).get("succeeded", 0) >= 200, 60, "a drain under way")
    backend.pause_queue("other")
    returned_at = db_now()
    wait_until(
        lambda: statuses(ids).get("running", 0) == 0, 30, "the jobs running at the pause to end"
    )
    time.sleep(2)  # every worker polls and wakes several times meanwhile
    resumed_at = db_now()
    backend.resume_queue("other")
    wait_until(lambda: statuses(ids) == {"succeeded": 3000}, 120, "the rest after the resume")
    claims = Job.objects.filter(pk__in=ids).values_list("last_attempted_at", flat=True)
    assert not [claim for claim in claims if returned_at <= claim < resumed_at]
    assert any(claim >= resumed_at for claim in claims)  # the pause held jobs back


# Expiry


def test_a_worker_claims_live_jobs_at_once_while_its_sweep_fails_an_expired_backlog(
    start_workers, backend
):
    """After an outage longer than their expiry, 20,000 expired jobs wait ahead of live ones. A
    worker that starts runs the live ones at once (its polls never read an expired row) while
    its sweep fails the backlog beside it, not after it."""
    expired = backend.enqueue_many([(control_tasks.expiring, (n,), {}) for n in range(20_000)])
    Job.objects.update(run_after=F("run_after") - timedelta(minutes=2), expires_at=F("run_after"))
    live = [add.enqueue(n, n).id for n in range(4)]
    live.append(control_tasks.expiring.using(expires_after=600).enqueue(-1).id)
    # Sweeps of 100 jobs: the backlog takes the sweep a few seconds.
    start_workers("--concurrency", "4", options={"sweep_batch": 100})
    wait_until(lambda: statuses(live) == {"succeeded": 5}, 30, "the live jobs")
    expired_ids = [result.id for result in expired]
    wait_until(lambda: statuses(expired_ids) == {"failed": 20_000}, 120, "the backlog expired")
    # The order the database recorded (each sweep batch stamps its jobs' finished_at): the
    # sweep was still failing the backlog after the last live job had finished.
    last_live = Job.objects.filter(pk__in=live).aggregate(at=Max("finished_at"))["at"]
    swept_after = Job.objects.filter(pk__in=expired_ids, finished_at__gt=last_live).count()
    assert swept_after > 0, last_live
    assert set(Job.objects.filter(pk__in=expired_ids).values_list("attempt", flat=True)) == {0}


def test_expired_jobs_behind_a_blocker_never_run_and_consume_no_attempt(
    start_workers, backend, tmp_path, monkeypatch, admin_client
):
    """1,000 expired jobs wait behind a 3 s job on a one-slot worker: none runs. With no sweep
    due, the claims refuse them at the front of the queue; the next sweep ends them failed with
    JobExpired, attempt 0, counted as expired."""
    directory = tmp_path / "prometheus"
    directory.mkdir()
    metrics_env = {"PROMETHEUS_MULTIPROC_DIR": str(directory)}
    start_workers(
        "--queues", "*", "--concurrency", "1", options={"sweep_seconds": 120}, env=metrics_env
    )
    blocker = async_sleep.using(priority=10).enqueue(3).id
    wait_until(lambda: Job.objects.get(pk=blocker).status == "running", 20, "the blocker")
    calls = [(control_tasks.expiring, (n,), {}) for n in range(1000)]
    # Expired as they are written (in the enqueue's transaction), however long after the
    # blocker's start a loaded machine gets here: the free worker never sees them live.
    with transaction.atomic():
        ids = [result.id for result in backend.enqueue_many(calls)]
        Job.objects.filter(pk__in=ids).update(expires_at=F("run_after"))
    wait_until(lambda: Job.objects.get(pk=blocker).status == "succeeded", 20, "the blocker")
    time.sleep(1.5)  # the worker is free and polls: it would claim them, were they not expired
    assert statuses(ids) == {"queued": 1000}
    assert not Execution.objects.exists()

    start_workers("--queues", "*", env=metrics_env)  # it sweeps as it starts
    wait_until(lambda: statuses(ids) == {"failed": 1000}, 30, "every job expired")
    assert not Execution.objects.exists()
    jobs = Job.objects.filter(pk__in=ids)
    assert set(jobs.values_list("attempt", flat=True)) == {0}
    assert {job.errors[-1]["exception_class_path"] for job in jobs} == {
        "django_leasequeue.exceptions.JobExpired"
    }

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    body = admin_client.get(reverse("leasequeue:metrics")).content.decode()
    expired = sum(
        sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "leasequeue_jobs_expired_total"
        and sample.labels["task"] == "tests.support.tasks.control.expiring"
    )
    assert expired == 1000


# Snoozes


def test_a_stale_workers_snooze_is_refused(start_workers):
    """Another worker took the job over (its lease version moved on) while the task ran; the
    task then snoozes: the fenced write is refused and the new holder's job is untouched."""
    job_id = control_tasks.snoozes_once_usurped.enqueue().id
    # Long heartbeats: the task, not the heartbeat, is the first to meet the lost lease.
    workers = start_workers("--queues", "*", options={"lease_seconds": 60, "heartbeat_seconds": 20})
    wait_until(lambda: Job.objects.get(pk=job_id).status == "running", 20, "the job to start")
    before = Job.objects.get(pk=job_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE leasequeue_job SET worker_id = 'usurper', lease_version = lease_version + 1"
            " WHERE id = %s",
            [job_id],
        )
    wait_until(
        lambda: "lease lost before its snooze was written" in workers.log(),
        10,
        "the refused snooze",
    )
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.worker_id, job.snoozes, job.attempt) == ("running", "usurper", 0, 1)
    assert job.run_after == before.run_after
    assert job.lease_version == before.lease_version + 1


# Unique periods


RACE = """
import json, pathlib, time
from django.db import connection
from django.db.models import F, Max
from tests.support.tasks.control import hourly_report
connection.ensure_connection()
pathlib.Path({ready!r}).touch()
go = pathlib.Path({go!r})
while not go.exists():
    time.sleep(0.001)
ids = []
until = time.monotonic() + 3
while time.monotonic() < until:
    ids.append(hourly_report.enqueue(len(ids)).id)
print(json.dumps(ids))
"""


def test_a_key_held_for_a_period_survives_8_processes_enqueuing_at_once(start_workers, tmp_path):
    """Eight processes enqueue the same hourly key for 3 s while a worker runs the first job:
    one job exists, it ran once, and every enqueue returned it, before and after it ended."""
    start_workers("--queues", "*")
    database_url = harness.test_database_url()
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(8)]
    processes = [
        harness.start_django_shell(database_url, RACE.format(ready=str(path), go=str(go)))
        for path in ready
    ]
    # All eight start together once each has Django set up and a connection open, however
    # long a loaded machine takes to get them there.
    wait_until(lambda: all(path.exists() for path in ready), 90, "the 8 processes to be ready")
    go.touch()
    outputs = [process.communicate(timeout=120) for process in processes]
    assert all(process.returncode == 0 for process in processes), outputs
    returned = [job_id for out, _ in outputs for job_id in json.loads(out.strip().splitlines()[-1])]
    assert len(returned) > 80
    [job] = Job.objects.filter(unique_key="hourly-report")
    assert set(returned) == {str(job.id)}
    wait_until(lambda: Job.objects.get(pk=job.id).status == "succeeded", 20, "the one job")
    assert Execution.objects.filter(job_id=job.id).count() == 1
    # Finished, it still holds the key for the rest of the hour.
    assert control_tasks.hourly_report.enqueue(0).id == str(job.id)
