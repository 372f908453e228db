"""What the bench scripts share: their own database (lq_bench) set up and emptied, jobs enqueued
in bulk, and ``runworkers`` processes started and stopped (under ``bench.settings``)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_database() -> None:
    import django
    import psycopg

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    db = settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname="postgres", autocommit=True
    ) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)


def reset() -> None:
    from django.db import connection
    from django_redis import get_redis_connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE leasequeue_job, leasequeue_dependency, leasequeue_workflow")
        cursor.execute("VACUUM ANALYZE leasequeue_job")
    client = get_redis_connection("default")
    for key in client.scan_iter("lqbench:*"):
        client.delete(key)


def checkpoint() -> None:
    """Write every dirty buffer now: a timed run that follows does not meet a checkpoint due to
    the writes of the one before it, nor the full-page images that follow one partway."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")


def bulk_enqueue(jobs: int, task) -> float:
    """enqueue_many in chunks of 5,000, in one transaction like the raw COPY it is set beside
    (signals and ``task_enqueued`` go out on commit, inside the timing)."""
    from django.db import transaction

    backend = task.get_backend()
    chunk = 5000
    started = time.perf_counter()
    with transaction.atomic():
        for start in range(0, jobs, chunk):
            calls = [(task, (n,), {}) for n in range(start, min(jobs, start + chunk))]
            backend.enqueue_many(calls)
    return jobs / (time.perf_counter() - started)


def worker_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def start_workers(
    processes: int, concurrency: int, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "django",
            "runworkers",
            "--processes",
            str(processes),
            "--concurrency",
            str(concurrency),
            "-v",
            "0",
            *extra,
        ],
        cwd=ROOT,
        env={**worker_env(), **(env or {})},
        start_new_session=True,
    )


def stop_workers(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(60)


def wait_all_finished(jobs: int, timeout: float = 600) -> None:
    from django_leasequeue.models import Job

    deadline = time.monotonic() + timeout
    while Job.objects.filter(status="succeeded").count() < jobs:
        if time.monotonic() > deadline:
            raise SystemExit("drain did not finish in time")
        time.sleep(0.05)
