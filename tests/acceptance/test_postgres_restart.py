"""A full PostgreSQL restart in the middle of a run: the test starts a cluster of its own so
that it can stop it for 10 s, and start it again. Real runworkers processes, real servers."""

import json
import os
import subprocess
import sys
import time

import psycopg
import pytest
import redis
from django.conf import settings

from tests.acceptance import harness
from tests.acceptance.harness import django_shell, wait_until
from tests.support.servers import PostgresServer

pytestmark = [pytest.mark.crash, pytest.mark.django_independent]

JOBS = 500
DOWN_SECONDS = 10
# Leases long enough to survive a busy moment, short enough that the jobs of the outage come
# back quickly; the worker self-fences (stops the jobs) before they expire.
OPTIONS = {"lease_seconds": 5, "heartbeat_seconds": 1, "sweep_seconds": 0.5}


@pytest.fixture
def own_postgres():
    try:
        server = PostgresServer().start()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot start a PostgreSQL of the test's own: {exc}")
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE leasequeue")
        url = server.url("leasequeue")
        migrate = subprocess.run(
            [sys.executable, "-m", "django", "migrate", "-v", "0"],
            cwd=harness.ROOT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "tests.support.settings",
                "DATABASE_URL": url,
                "PYTHONPATH": str(harness.ROOT),
            },
            capture_output=True,
            text=True,
        )
        assert migrate.returncode == 0, migrate.stderr
        yield server, url
    finally:
        server.remove()


def scalar(url: str, sql: str) -> int:
    with psycopg.connect(url, connect_timeout=5) as conn:
        return conn.execute(sql).fetchone()[0]


def test_a_full_postgresql_restart_mid_run_loses_nothing(start_workers, own_postgres):
    server, url = own_postgres
    enqueue = django_shell(
        url,
        "import random\n"
        "from tests.support.tasks.basic import recorded_work\n"
        "calls = [(recorded_work, (n, random.randint(100, 400)), {})"
        f" for n in range({JOBS})]\n"
        "recorded_work.get_backend().enqueue_many(calls)",
    )
    assert enqueue.returncode == 0, enqueue.stderr
    workers = start_workers(
        "--processes", "2", "--concurrency", "10", options=OPTIONS, database_url=url
    )
    children = workers.wait_for_children(2)
    wait_until(lambda: scalar(url, "SELECT count(*) FROM tests_receipt") >= 100, 60, "progress")

    server.stop("fast")
    stopped_at = time.monotonic()
    done_before = scalar_or_none(url)
    assert done_before is None  # really down

    # An enqueue while PostgreSQL is down: a clear error in the caller, nothing written anywhere
    # (its own key prefix shows whether a wakeup went to Redis).
    down_prefix = f"{settings.KEY_PREFIX}-down"
    down_options = json.dumps({"key_prefix": down_prefix})
    started = time.monotonic()
    failed = django_shell(
        url,
        "from tests.support.tasks.basic import add\n"
        "try:\n"
        "    add.enqueue(1, 2)\n"
        "except Exception as exc:\n"
        "    print(f'{type(exc).__module__}.{type(exc).__name__}: {exc}')\n"
        "    raise SystemExit(3)\n",
        LEASEQUEUE_OPTIONS=down_options,
    )
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "django.db.utils.OperationalError" in failed.stdout
    # Refused, or closed as it opened: what libpq says depends on where the stop was when
    # the connection came (under a CPU hog, "server closed the connection unexpectedly").
    assert "connection failed" in failed.stdout
    assert time.monotonic() - started < 30
    wakeups = redis.Redis.from_url(settings.REDIS_URL)
    assert not wakeups.keys(f"{down_prefix}:*")

    time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - stopped_at)))
    server.start()
    restarted_at = time.monotonic()
    receipts_at_restart = scalar(url, "SELECT count(*) FROM tests_receipt")
    wait_until(
        lambda: scalar(url, "SELECT count(*) FROM tests_receipt") > receipts_at_restart,
        60,
        "the first job to finish after the restart",
    )
    resumed_in = time.monotonic() - restarted_at
    wait_until(
        lambda: scalar(url, "SELECT count(*) FROM leasequeue_job WHERE status <> 'succeeded'") == 0,
        120,
        "every job to succeed",
    )
    drained_in = time.monotonic() - restarted_at

    assert scalar(url, "SELECT count(*) FROM leasequeue_job") == JOBS  # the failed enqueue: none
    assert scalar(url, "SELECT count(DISTINCT job_id) FROM tests_receipt") == JOBS  # 0 lost
    assert scalar(url, "SELECT count(*) FROM tests_receipt") == JOBS  # none committed twice
    results = scalar(url, "SELECT count(DISTINCT result) FROM leasequeue_job")
    assert results == JOBS
    executions = scalar(url, "SELECT count(*) FROM tests_execution")
    log = workers.log()
    assert workers.process.poll() is None
    assert "PostgreSQL answers again" in log  # the workers came back by themselves
    restarted = "died" in log
    print(
        f"PostgreSQL down {DOWN_SECONDS} s mid-run ({JOBS} jobs, 2 x 10): first job done "
        f"{resumed_in:.1f} s after the restart, all done {drained_in:.1f} s after it; "
        f"0 lost, {executions - JOBS} re-run(s), 0 committed twice; worker processes "
        f"{'restarted' if restarted else 'the same: ' + str(sorted(children))}"
    )


def scalar_or_none(url: str) -> int | None:
    """The job count, or None when PostgreSQL does not accept a connection."""
    try:
        return scalar(url, "SELECT count(*) FROM leasequeue_job")
    except psycopg.OperationalError:
        return None


def test_a_burst_gives_up_when_postgresql_goes_down_mid_run(start_workers, own_postgres):
    """PostgreSQL stops while a burst runs jobs: the burst waits --max-wait seconds, stops, and
    runworkers exits 1 saying why, instead of waiting for ever (and no process restarts)."""
    server, url = own_postgres
    enqueue = django_shell(
        url,
        "from tests.support.tasks.basic import async_sleep\n"
        "async_sleep.get_backend().enqueue_many([(async_sleep, (30,), {}) for _ in range(3)])",
    )
    assert enqueue.returncode == 0, enqueue.stderr
    workers = start_workers("--burst", "--max-wait", "2", options=OPTIONS, database_url=url)
    wait_until(
        lambda: scalar(url, "SELECT count(*) FROM leasequeue_job WHERE status = 'running'") == 3,
        30,
        "the jobs to run",
    )
    server.stop("fast")
    stopped_at = time.monotonic()
    code = workers.process.wait(60)
    took = time.monotonic() - stopped_at
    log = workers.log()
    assert code == 1, log
    assert 2 <= took < 20, f"gave up {took:.1f} s after PostgreSQL stopped"
    assert "the burst gives up (--max-wait 2)." in log
    assert "Worker process 0 gave up waiting for PostgreSQL (--max-wait): stopping" in log
    assert log.count("Started worker process") == 1  # not restarted to wait again
    print(f"burst gave up {took:.1f} s after PostgreSQL stopped (--max-wait 2)")
