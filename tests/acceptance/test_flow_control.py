"""Flow control with real runworkers processes: the jobs record their own start and end (the
database's clock), so each property is measured from what ran, not assumed."""

import os
import signal
import threading
import time
from datetime import timedelta

import pytest
import redis
from django.db import connection
from django.test import override_settings

from django_leasequeue.models import Job
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support.servers import RedisServer
from tests.support.tasks import flow as flow_tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.crash,
    pytest.mark.django_independent,
]


@pytest.fixture(autouse=True)
def flow_runs(monkeypatch):
    """The table the jobs record their runs in, and the direct address they write it through."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE flow_run (id serial PRIMARY KEY, label text, key text, pid integer, "
            "started timestamptz DEFAULT clock_timestamp(), ended timestamptz)"
        )
    monkeypatch.setenv("LEASEQUEUE_RUNS_DSN", harness.test_database_url())
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE flow_run")


def _runs(prefix: str) -> list[tuple[str, object, object]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT key, started, ended FROM flow_run WHERE label LIKE %s ORDER BY started",
            [f"{prefix}%"],
        )
        return cursor.fetchall()


def _most_at_once(runs) -> int:
    """The highest number of runs in progress at one instant (an end before a start at a tie)."""
    events = sorted(
        [(started, 1) for _, started, _ in runs] + [(ended, -1) for _, _, ended in runs],
        key=lambda event: (event[0], event[1]),
    )
    at_once = most = 0
    for _, change in events:
        at_once += change
        most = max(most, at_once)
    return most


def _wait_for_workers(workers, count: int) -> None:
    """Until ``count`` worker processes are up: a loaded machine takes seconds to start them."""
    wait_until(lambda: workers.log().count("queues=") >= count, 60, f"{count} workers to start")


# A worker claims the next limited job once its Redis wait ends (poll_seconds at most), not as
# soon as one of its limited jobs ends: polling every 0.1 s, hundreds of short capped jobs take
# seconds, not a minute.
QUICK_SLOTS = {"poll_seconds": 0.1}


def _succeeded(task) -> int:
    return Job.objects.filter(task_path=task.module_path, status="succeeded").count()


def test_a_concurrency_cap_holds_across_three_processes(start_workers, backend):
    backend.enqueue_many([(flow_tasks.capped, (n, 0.02), {}) for n in range(300)])
    start_workers("--processes", "3", "--concurrency", "10", options=QUICK_SLOTS)
    wait_until(lambda: _succeeded(flow_tasks.capped) == 300, 90, "all 300 capped jobs")
    runs = _runs("capped-")
    assert len(runs) == 300  # nothing ran twice
    print(f"concurrency=2: at most {_most_at_once(runs)} at once over 300 jobs")
    assert _most_at_once(runs) == 2


def test_keyed_caps_hold_per_key(start_workers, backend):
    backend.enqueue_many(
        [(flow_tasks.per_user, (user_id, n, 0.02), {}) for n in range(20) for user_id in range(5)]
    )
    start_workers("--processes", "3", "--concurrency", "10", options=QUICK_SLOTS)
    wait_until(lambda: _succeeded(flow_tasks.per_user) == 100, 90, "all 100 keyed jobs")
    runs = _runs("per-user-")
    for user_id in range(5):
        assert _most_at_once([run for run in runs if run[0] == f"user:{user_id}"]) == 1
    assert 2 <= _most_at_once(runs) <= 5


def test_a_queue_cap_holds_across_tasks_and_keys(start_workers, backend):
    """queue_limits: the llm queue runs two calls at once, whoever's they are."""
    backend.enqueue_many(
        [(flow_tasks.llm_call, (user_id, n, 0.02), {}) for n in range(10) for user_id in range(6)]
    )
    start_workers("--processes", "2", "--concurrency", "10", "--queues", "llm", options=QUICK_SLOTS)
    wait_until(lambda: _succeeded(flow_tasks.llm_call) == 60, 90, "all 60 llm calls")
    assert _most_at_once(_runs("llm-")) == 2


def test_a_killed_holder_gives_its_slot_back_and_nothing_is_lost(start_workers):
    first = flow_tasks.single_slot.enqueue(0, 30).id  # holds the only slot for 30 s
    rest = [flow_tasks.single_slot.enqueue(n, 0.01).id for n in range(1, 10)]
    workers = start_workers("--processes", "2", "--concurrency", "5")
    wait_until(
        lambda: Job.objects.filter(pk=first, status="running").exists(), 20, "the slot holder"
    )
    wait_until(lambda: _runs("single-0"), 10, "the holder to record its run")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM flow_run WHERE label = 'single-0'")
        [[pid]] = cursor.fetchall()
    assert pid in workers.children()
    time.sleep(0.5)
    assert Job.objects.filter(pk__in=rest, status="running").count() == 0  # the slot is taken
    os.kill(pid, signal.SIGKILL)
    wait_until(
        lambda: Job.objects.filter(pk__in=rest, status="succeeded").count() == 9,
        30,
        "the others to get the slot back",
    )
    job = Job.objects.get(pk=first)
    assert job.status in {"running", "retrying"}  # its second attempt, not lost
    assert job.attempt >= 1 and job.errors[0]["exception_class_path"].endswith("LeaseExpired")
    assert _most_at_once([run for run in _runs("single-") if run[2] is not None]) == 1


def test_a_rate_limit_holds_through_a_redis_flush_and_outage(start_workers, backend):
    """10/s over 200 jobs and 3 processes, while Redis is flushed, then down for 4 s: any
    one-second window holds at most 12 claims, and the overall rate is within 10% of 10/s;
    unlimited jobs enqueued while Redis is down still run."""
    with RedisServer() as server, override_settings(CACHES=server.caches()):
        backend.enqueue_many([(flow_tasks.rated, (n,), {}) for n in range(200)])
        workers = start_workers("--processes", "3", "--concurrency", "10", redis_url=server.url)
        _wait_for_workers(workers, 3)
        time.sleep(5)
        redis.Redis(port=server.port).flushall()
        time.sleep(5)
        server.stop()
        down_until = time.monotonic() + 4
        during_outage = [flow_tasks.unlimited.enqueue(n).id for n in range(20)]
        wait_until(
            lambda: Job.objects.filter(pk__in=during_outage, status="succeeded").count() == 20,
            15,
            "unlimited jobs to run while Redis is down",
        )
        time.sleep(max(0.0, down_until - time.monotonic()))
        server.start()
        wait_until(lambda: _succeeded(flow_tasks.rated) == 200, 60, "all 200 rated jobs")
    starts = [started for _, started, _ in _runs("rated-")]
    assert len(starts) == 200
    # The limit admits a job at its claim; its start can lag the claim by its thread's
    # scheduling on a loaded machine (13 starts in a window, once in CI), so the windows
    # count claims, by the database's clock.
    claims = sorted(
        Job.objects.filter(task_path=flow_tasks.rated.module_path).values_list(
            "last_attempted_at", flat=True
        )
    )
    assert len(claims) == 200
    window = timedelta(seconds=1)
    most = max(sum(1 for c in claims[i:] if c <= claim + window) for i, claim in enumerate(claims))
    assert most <= 12, most
    rate = (len(claims) - 1) / (claims[-1] - claims[0]).total_seconds()
    print(f"rate_limit=10/s: at most {most} claims in a 1 s window, {rate:.2f} claims/s overall")
    assert 9.0 <= rate <= 11.0, rate


def test_a_low_priority_job_starts_under_a_stream_of_high_priority_ones(start_workers):
    """A stream of priority-100 jobs keeps both slots busy and a backlog waiting; a priority-0
    job still starts within oldest_first_seconds (1 s) once it is the oldest due job, ahead of
    the priority-100 jobs waiting then (the database's record of each enqueue and claim). Without
    Redis, so that claims come in priority order (wakeups come first-in, first-out)."""
    stop = threading.Event()

    def stream():
        n = 0
        try:
            while not stop.is_set():
                if Job.objects.filter(status="queued", priority=100).count() < 20:
                    for _ in range(10):
                        flow_tasks.urgent.enqueue(n, 0.05)
                        n += 1
                time.sleep(0.02)
        finally:
            connection.close()

    feeder = threading.Thread(target=stream)
    feeder.start()
    try:
        workers = start_workers(
            "--processes", "1", "--concurrency", "2", options={"redis_alias": None}
        )
        _wait_for_workers(workers, 1)
        wait_until(lambda: len(_runs("urgent-")) >= 20, 20, "the stream to run")
        humble = flow_tasks.humble.enqueue(0).id
        wait_until(
            lambda: Job.objects.filter(pk=humble, status="succeeded").exists(),
            30,
            "the low-priority job to start",
        )
    finally:
        stop.set()
        feeder.join()
    job = Job.objects.get(pk=humble)
    waited = job.last_attempted_at - job.enqueued_at
    print(f"priority 0 under a priority-100 stream: claimed {waited} after its enqueue")
    # The stream went on: priority-100 jobs waiting when it was claimed were claimed after it.
    overtaken = Job.objects.filter(
        priority=100,
        enqueued_at__lt=job.last_attempted_at,
        last_attempted_at__gt=job.last_attempted_at,
    )
    assert overtaken.exists()
    # Claimed after oldest_first_seconds (1 s) and a poll, not when the stream ran dry; the
    # margin is for a loaded machine's stalls.
    assert waited < timedelta(seconds=5), waited
