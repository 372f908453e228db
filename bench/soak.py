"""Soak: steady load for a long time while workers are killed, Redis restarts and PostgreSQL
ends the workers' connections; nothing may be lost and memory must stay flat.

    python bench/soak.py [--minutes 30] [--window 5] [--rate 10] [--processes 2] [--concurrency 10]

Jobs (``bench.tasks.soak_work``: 50-300 ms each) are enqueued one at a time at ``--rate`` per
second into a database of its own (``lq_soak``, created and migrated) and run by one
``runworkers`` on a private ``redis-server`` (started on a free port, so that restarting it
disturbs nobody). Every 15-45 s (random) one fault, chosen at random: SIGKILL of a worker
process; a Redis restart (killed, down 2 s, started again); ``pg_terminate_backend`` of every
connection the workers hold. After ``--minutes``, enqueuing stops and the workers drain.

Per window (by enqueue time): jobs enqueued and done, lost (not succeeded after the drain: must
be 0), run twice (jobs that started more than once: expected after kills), committed twice
(fenced receipts written twice: must be 0), p99 pickup latency (first start - enqueue), faults,
and the worker processes' RSS at the end of the window. Exits 1 when a job was lost or
committed twice. Not part of the test suite.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Leases short enough that a fault the supervisor cannot see (a terminated connection) heals
# within seconds; heartbeats well inside them.
SOAK_OPTIONS = {"lease_seconds": 10, "heartbeat_seconds": 2, "sweep_seconds": 2}
FAULTS = ("kill -9 worker", "redis restart", "pg_terminate_backend")


@dataclass
class Window:
    index: int
    started_at: float  # wall clock (time.time), for the SQL on enqueued_at
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAULTS, 0))
    rss_mb: list[float] = field(default_factory=list)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--window", type=float, default=5, help="minutes per reported window")
    parser.add_argument("--rate", type=float, default=10, help="jobs enqueued per second")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/lq_soak")
    parser.add_argument("--seed", type=int, default=None)
    return parser.parse_args()


def setup(database_url: str, redis_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["REDIS_URL"] = redis_url
    os.environ["LEASEQUEUE_OPTIONS"] = json.dumps(SOAK_OPTIONS)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django
    import psycopg

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    db = settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname="postgres", autocommit=True
    ) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]])
        if not found.fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE leasequeue_job, leasequeue_dependency, leasequeue_workflow, tests_execution, "
            "tests_receipt"
        )


def start_workers(processes: int, concurrency: int, log) -> subprocess.Popen:
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
            "--grace",
            "5",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def worker_pids(supervisor: subprocess.Popen) -> list[int]:
    path = Path(f"/proc/{supervisor.pid}/task/{supervisor.pid}/children")
    try:
        pids = [int(pid) for pid in path.read_text().split()]
    except FileNotFoundError:
        return []
    return [pid for pid in pids if b"spawn_main" in _read(f"/proc/{pid}/cmdline")]


def rss_mb(pid: int) -> float:
    for line in _read(f"/proc/{pid}/status").decode().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def inject(fault: str, supervisor: subprocess.Popen, redis_server) -> None:
    from django.db import connection

    if fault == "kill -9 worker":
        pids = worker_pids(supervisor)
        if pids:
            os.kill(random.choice(pids), signal.SIGKILL)
    elif fault == "redis restart":
        redis_server.stop()
        time.sleep(2)
        redis_server.start()
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


def enqueue_one(n: int) -> None:
    from bench.tasks import soak_work

    soak_work.enqueue(n, random.randint(50, 300))


def window_figures(window: Window, ends_at: float) -> dict:
    """Figures of the jobs enqueued in the window (SQL on the job and receipt tables)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH jobs AS (
                SELECT id, status, started_at, enqueued_at FROM leasequeue_job
                WHERE enqueued_at >= to_timestamp(%s) AND enqueued_at < to_timestamp(%s)
            ), runs AS (
                SELECT job_id, count(*) AS n FROM tests_execution
                WHERE job_id IN (SELECT id FROM jobs) GROUP BY job_id
            ), receipts AS (
                SELECT job_id, count(*) AS n FROM tests_receipt
                WHERE job_id IN (SELECT id FROM jobs) GROUP BY job_id
            )
            SELECT
                (SELECT count(*) FROM jobs),
                (SELECT count(*) FROM jobs WHERE status = 'succeeded'),
                (SELECT count(*) FROM jobs WHERE status <> 'succeeded'),
                (SELECT count(*) FROM runs WHERE n > 1),
                (SELECT count(*) FROM receipts WHERE n > 1),
                (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY
                    extract(epoch FROM started_at - enqueued_at)) FROM jobs
                 WHERE started_at IS NOT NULL)
            """,
            [window.started_at, ends_at],
        )
        enqueued, done, not_done, run_twice, committed_twice, p99 = cursor.fetchone()
    return {
        "enqueued": enqueued,
        "done": done,
        "lost": not_done,
        "run twice": run_twice,
        "committed twice": committed_twice,
        "p99 pickup ms": round((p99 or 0) * 1000, 1),
    }


def unfinished() -> int:
    from django_leasequeue.models import Job

    return Job.objects.exclude(status="succeeded").count()


def main() -> int:
    args = parse_args()
    # Stopped by SIGTERM (a background job ignores SIGINT): clean up as after Ctrl-C.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    random.seed(args.seed)
    from tests.support.servers import RedisServer

    redis_server = RedisServer().start()
    setup(args.database_url, redis_server.url)
    log_path = Path(f"/tmp/leasequeue-soak-{os.getpid()}.log")
    log = log_path.open("ab")
    supervisor = start_workers(args.processes, args.concurrency, log)
    print(
        f"Soak: {args.minutes} min at {args.rate} jobs/s, {args.processes} x {args.concurrency}, "
        f"options {SOAK_OPTIONS}; Redis on port {redis_server.port}; worker log {log_path}",
        flush=True,
    )
    # Workers up (Django loaded, first sweep done) before the clock starts.
    deadline = time.monotonic() + 60
    while len(worker_pids(supervisor)) < args.processes and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)
    windows: list[Window] = []
    started = time.time()
    end = time.monotonic() + args.minutes * 60
    next_fault = time.monotonic() + random.uniform(15, 45)
    n = 0
    try:
        while time.monotonic() < end:
            index = int((time.time() - started) // (args.window * 60))
            if not windows or windows[-1].index != index:
                if windows:
                    close_window(windows[-1], supervisor)
                windows.append(Window(index, time.time()))
            if time.monotonic() >= next_fault:
                fault = random.choice(FAULTS)
                inject(fault, supervisor, redis_server)
                windows[-1].faults[fault] += 1
                next_fault = time.monotonic() + random.uniform(15, 45)
            tick = time.monotonic()
            enqueue_one(n)
            n += 1
            time.sleep(max(0.0, 1 / args.rate - (time.monotonic() - tick)))
        close_window(windows[-1], supervisor)
        drain_until = time.monotonic() + 120
        while unfinished() and time.monotonic() < drain_until:
            time.sleep(1)
    finally:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(supervisor.pid, signal.SIGKILL)
        redis_server.stop()
        log.close()
    return report(windows, started + args.minutes * 60, args.window)


def close_window(window: Window, supervisor: subprocess.Popen) -> None:
    window.rss_mb = [rss_mb(pid) for pid in worker_pids(supervisor)]
    rss = ", ".join(f"{mb:.0f}" for mb in window.rss_mb)
    print(f"  window {window.index + 1} closed; worker RSS MB: {rss}", flush=True)


def report(windows: list[Window], ended_at: float, window_minutes: float) -> int:
    header = (
        f"{'window':>8} {'enqueued':>9} {'done':>7} {'lost':>5} {'run twice':>10} "
        f"{'committed twice':>16} {'p99 pickup':>11} {'worker RSS MB':>14}  faults"
    )
    print(header)
    bad = 0
    for window, following in zip(windows, [*windows[1:], None], strict=True):
        ends_at = following.started_at if following else ended_at
        figures = window_figures(window, ends_at)
        bad += figures["lost"] + figures["committed twice"]
        rss = "/".join(f"{mb:.0f}" for mb in window.rss_mb) or "-"
        faults = ", ".join(f"{name} x{count}" for name, count in window.faults.items() if count)
        minutes = f"{window.index * window_minutes:g}-{(window.index + 1) * window_minutes:g}m"
        print(
            f"{minutes:>8} {figures['enqueued']:>9} {figures['done']:>7} {figures['lost']:>5} "
            f"{figures['run twice']:>10} {figures['committed twice']:>16} "
            f"{figures['p99 pickup ms']:>9}ms {rss:>14}  {faults or '-'}"
        )
    print("OK: nothing lost, nothing committed twice." if not bad else f"FAILED: {bad} bad jobs.")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
