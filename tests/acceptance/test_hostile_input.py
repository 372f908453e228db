"""One bad row, one bad Redis value or one huge payload costs only itself: the worker and its
other jobs go on (issue #16's probes, against real runworkers processes)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from django_leasequeue.models import Job, Undecodable
from django_leasequeue.tasks_framework import TaskResultStatus
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import add, async_sleep, returns_deep, returns_nul

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

DEEP_ARGS = "[" * 5000 + "]" * 5000


def _write_args(job_id: str, args: str | None = None, kwargs: str | None = None) -> None:
    """Overwrite a queued job's arguments in the table, around enqueue's checks."""
    with connection.cursor() as cursor:
        if args is not None:
            cursor.execute(
                "UPDATE leasequeue_job SET args = %s::jsonb WHERE id = %s", [args, job_id]
            )
        if kwargs is not None:
            cursor.execute(
                "UPDATE leasequeue_job SET kwargs = %s::jsonb WHERE id = %s", [kwargs, job_id]
            )


def test_rows_the_worker_cannot_decode_fail_alone_and_in_flight_jobs_keep_their_leases(
    start_workers,
):
    long_job = async_sleep.enqueue(4).id
    workers = start_workers("--concurrency", "10")
    wait_until(lambda: Job.objects.get(pk=long_job).status == "running", 20, "the long job")
    lease_before = Job.objects.get(pk=long_job).lease_version
    # Due in a moment: written over before any worker can claim them.
    later = add.using(run_after=timezone.now() + timedelta(seconds=1))
    bad = {
        "deep": later.enqueue(1, 1).id,
        "kwargs not an object": later.enqueue(1, 1).id,
        "args not a list": later.enqueue(1, 1).id,
    }
    _write_args(bad["deep"], args=DEEP_ARGS)
    _write_args(bad["kwargs not an object"], kwargs="[1, 2]")
    _write_args(bad["args not a list"], args='{"a": 1}')
    good = add.enqueue(20, 22).id
    assert Job.objects.get(pk=long_job).status == "running"  # in flight while they fail

    finished = {"failed", "succeeded"}
    wait_until(
        lambda: (
            set(Job.objects.filter(pk__in=[*bad.values(), good]).values_list("status", flat=True))
            <= finished
        ),
        30,
        "every job to end",
    )
    for what, job_id in bad.items():
        job = Job.objects.defer("args", "kwargs").get(pk=job_id)
        assert (job.status, job.attempt) == ("failed", 1), what  # failed at once, not retried
        error = job.errors[-1]
        assert error["exception_class_path"] == "django_leasequeue.exceptions.UndecodableJob"
        assert "The stored job" in error["message"], error["message"]
    assert Job.objects.get(pk=good).result == 42
    wait_until(lambda: Job.objects.get(pk=long_job).status == "succeeded", 20, "the long job")
    long = Job.objects.get(pk=long_job)
    assert (long.attempt, long.lease_version) == (1, lease_before)  # never lost its lease
    assert workers.process.poll() is None


def test_a_job_that_cannot_be_decoded_can_still_be_read_back(admin_client):
    job_id = add.enqueue(1, 2).id
    _write_args(job_id, args=DEEP_ARGS)
    result = add.get_backend().get_result(job_id)
    assert result.status == TaskResultStatus.READY and result.args == []
    result.refresh()
    assert isinstance(Job.objects.get(pk=job_id).args, Undecodable)
    listing = admin_client.get(reverse("admin:leasequeue_job_changelist"))
    assert listing.status_code == 200 and job_id[-8:] in listing.content.decode()
    detail = admin_client.get(reverse("admin:leasequeue_job_change", args=[job_id]))
    assert detail.status_code == 200
    assert "undecodable (10000 bytes)" in detail.content.decode()


def test_results_that_cannot_be_stored_fail_at_once_and_spare_the_batch(start_workers):
    nul, deep = returns_nul.enqueue().id, returns_deep.enqueue().id
    goods = [add.enqueue(n, n).id for n in range(20)]
    start_workers()
    ids = [nul, deep, *goods]
    wait_until(
        lambda: not Job.objects.filter(pk__in=ids, status__in=["queued", "running", "retrying"]),
        20,
        "every job to end",
    )
    for job_id, problem in [(nul, "NUL character"), (deep, "nested")]:
        job = Job.objects.get(pk=job_id)
        assert (job.status, job.attempt) == ("failed", 1)
        assert problem in job.errors[-1]["message"]
    assert set(Job.objects.filter(pk__in=goods).values_list("status", flat=True)) == {"succeeded"}


def test_garbage_watch_counters_in_redis_break_nothing(start_workers, redis_client, backend):
    running = async_sleep.enqueue(2).id
    queued = add.enqueue(2, 3).id
    for job_id in (running, queued):
        redis_client.set(backend.wakeups.watch_key(job_id), "x")
    workers = start_workers()
    wait_until(lambda: Job.objects.get(pk=running).status == "succeeded", 20, "the running job")
    wait_until(lambda: Job.objects.get(pk=queued).status == "succeeded", 20, "the queued job")
    assert Job.objects.get(pk=queued).result == 5
    later = add.enqueue(3, 4).id
    wait_until(lambda: Job.objects.get(pk=later).status == "succeeded", 20, "a later job")
    assert Job.objects.get(pk=later).attempt == 1  # its lease was renewed, not lost
    assert workers.process.poll() is None


def _transactions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            [connection.settings_dict["NAME"]],
        )
        return cursor.fetchone()[0]


def test_a_flood_of_garbage_wakeups_costs_a_few_log_lines_and_no_claims(
    start_workers, redis_client, backend
):
    workers = start_workers("--concurrency", "10")
    wait_until(lambda: "queues=" in workers.log(), 60, "the worker to start")  # then on Redis
    garbage = 100_000
    key = backend.wakeups.key("default")
    for start in range(0, garbage, 10_000):
        redis_client.rpush(key, *[f"junk-{n}" for n in range(start, start + 10_000)])
    before = _transactions()
    wait_until(lambda: redis_client.llen(key) == 0, 60, "the garbage to be popped")
    spent = _transactions() - before
    good = add.enqueue(1, 1).id
    wait_until(lambda: Job.objects.get(pk=good).status == "succeeded", 20, "a good job")
    lines = [line for line in workers.log().splitlines() if "not job ids" in line]
    print(f"{garbage} garbage wakeups: {len(lines)} log line(s), {spent} transactions")
    assert 1 <= len(lines) <= 10
    assert spent < 1000  # polls and heartbeats only: no claim per garbage pop (10,000 pops)
