"""The dashboard's cost (issue 38): its page and JSON on 1,000,000 jobs over 7 days, the history
rollup's cost per job finished, and enqueue with and without the rollup running, in one run.

Loads ``bench/dashboard_seed.sql`` (the jobs of ``bench/week_of_jobs.sql``) into its own
database (``VACUUM ANALYZE`` after), then

1. rolls the week up as the workers' sweep does after an outage (``HistoryRollup`` batch after
   batch until the mark has caught up): total time and µs per job finished, and one minute's
   rollup (what a sweep writes once a minute) beside it;
2. times the dashboard (HTML and JSON, windows 1h, 24h, 7d) through the test client, median,
   fastest and slowest of N runs, beside the job list's page in the same run;
3. enqueues single jobs (``task.enqueue()``, the web path) for ``--seconds`` at a time,
   alternately with nothing else running and with a rollup of the newest minute redone every
   second (sixty times what the workers do), and prints both rates.

    createdb -h 127.0.0.1 -U postgres lq_dashboard_bench
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lq_dashboard_bench \\
        python bench/dashboard.py [--runs 15] [--rounds 8] [--seconds 3] [--no-seed]
"""

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lq_dashboard_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, connections  # noqa: E402
from django.test import Client  # noqa: E402

from bench.admin_timing import timed_loads  # noqa: E402
from bench.tasks import noop  # noqa: E402
from django_leasequeue.models import QueueHistory, QueueHistoryMark  # noqa: E402
from django_leasequeue.runtime.database import Database  # noqa: E402
from django_leasequeue.runtime.history_rollup import HistoryRollup  # noqa: E402

WEEK = ROOT / "bench" / "week_of_jobs.sql"
SEED = ROOT / "bench" / "dashboard_seed.sql"
DASHBOARD = "/admin/leasequeue/job/dashboard/"
DECLARED = ("default", "emails", "reports", "high", "low", "billing")


def _sql(statement: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement)
        return cursor.fetchall() if cursor.description else []


def seed() -> None:
    call_command("migrate", verbosity=0)
    _sql("TRUNCATE leasequeue_job, leasequeue_queue_history, leasequeue_queue_history_mark CASCADE")
    started = time.perf_counter()
    _sql(WEEK.read_text())
    _sql(SEED.read_text())
    connection.cursor().execute("VACUUM ANALYZE leasequeue_job")
    print(f"seeded 1,000,000 jobs in {time.perf_counter() - started:.0f} s (VACUUM ANALYZE after)")


async def _roll_up_until_caught_up() -> tuple[float, int]:
    db = Database("default", prepared_statements=False, name="bench", lease_seconds=30)
    rollup = HistoryRollup(db, DECLARED)
    sweeps = 0
    started = time.perf_counter()
    try:
        while True:
            sweeps += 1
            await rollup.roll_up()
            mark = await asyncio.to_thread(_mark_behind)
            if mark <= timedelta(minutes=1):
                break
    finally:
        await db.close()
    return time.perf_counter() - started, sweeps


def _mark_behind() -> timedelta:
    try:
        [(behind,)] = _sql(
            "SELECT now() - rolled_up_to FROM leasequeue_queue_history_mark WHERE id = 1"
        )
        return behind
    finally:
        connection.close()


def rollup_cost() -> None:
    _sql("TRUNCATE leasequeue_queue_history, leasequeue_queue_history_mark")
    finished = _sql(
        "SELECT count(*) FROM leasequeue_job WHERE status IN ('succeeded', 'failed', 'cancelled')"
    )[0][0]
    seconds, sweeps = asyncio.run(_roll_up_until_caught_up())
    rows = QueueHistory.objects.count()
    print(
        f"\nrollup of the week (catching up, {sweeps} sweeps): {seconds:.2f} s for "
        f"{finished:,} finished jobs = {seconds / finished * 1e6:.1f} µs per job finished; "
        f"{rows:,} history rows"
    )
    # One minute, as a sweep writes it once a minute: a minute of the seed's newest, redone.
    times = [_one_minute() for _ in range(9)]
    per_minute = _sql(
        "SELECT count(*) FROM leasequeue_job WHERE finished_at >= now() - interval '40 minutes'"
        " AND finished_at < now() - interval '39 minutes'"
    )[0][0]
    print(
        f"one minute's rollup (~{per_minute} jobs finished in it, 6 queues): median "
        f"{statistics.median(times):.1f} ms (fastest {min(times):.1f}, slowest {max(times):.1f})"
    )


def _one_minute() -> float:
    """Redo the rollup of the minute 40 minutes ago (mark put back, its rows deleted)."""
    [(minute,)] = _sql("SELECT date_trunc('minute', now() - interval '40 minutes')")
    QueueHistory.objects.filter(start__gte=minute).delete()
    QueueHistoryMark.objects.update(rolled_up_to=minute)

    async def once() -> float:
        db = Database("default", prepared_statements=False, name="bench", lease_seconds=30)
        try:
            rollup = HistoryRollup(db, DECLARED)
            await db.transaction(_connected, "connect")
            started = time.perf_counter()
            await db.transaction(rollup._batch, "history rollup")
            return (time.perf_counter() - started) * 1000
        finally:
            await db.close()

    elapsed = asyncio.run(once())
    # Catch the rest up again for the pages.
    asyncio.run(_roll_up_until_caught_up())
    return elapsed


async def _connected(conn) -> None:
    await conn.execute("SELECT 1")


def pages(runs: int) -> None:
    user, _ = get_user_model().objects.get_or_create(
        username="dashboard-bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    print(f"\npage (median / fastest / slowest of {runs}, ms; target 200 ms):")
    for label, url in [
        ("job list (peer)", "/admin/leasequeue/job/"),
        *[
            (f"dashboard {window} {kind}", f"{DASHBOARD}?window={window}{suffix}")
            for window in ("1h", "24h", "7d")
            for kind, suffix in (("HTML", ""), ("JSON", "&format=json"))
        ],
    ]:
        times = timed_loads(client, url, runs).totals
        print(f"  {label:<22} {statistics.median(times):7.1f} {min(times):7.1f} {max(times):7.1f}")


def _enqueue_for(seconds: float) -> float:
    count = 0
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        noop.enqueue(count)
        count += 1
    return count / (time.perf_counter() - started)


class _Rollups(threading.Thread):
    """Redoes the rollup of the newest closed minute every second until stopped."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopping = threading.Event()
        self.done = 0

    def run(self) -> None:
        asyncio.run(self._loop())
        connections.close_all()

    async def _loop(self) -> None:
        db = Database("default", prepared_statements=False, name="bench-rollups", lease_seconds=30)
        rollup = HistoryRollup(db, DECLARED)
        try:
            while not self.stopping.is_set():
                await asyncio.to_thread(self._put_back)
                await rollup.roll_up()
                self.done += 1
                await asyncio.sleep(1)
        finally:
            await db.close()

    @staticmethod
    def _put_back() -> None:
        try:
            [(minute,)] = _sql("SELECT date_trunc('minute', now() - interval '70 seconds')")
            QueueHistory.objects.filter(start__gte=minute).delete()
            QueueHistoryMark.objects.update(rolled_up_to=minute)
        finally:
            connection.close()


def enqueue_rates(rounds: int, seconds: float) -> None:
    without, with_rollup = [], []
    rollups = 0
    _enqueue_for(1)  # warm up
    for _ in range(rounds):
        without.append(_enqueue_for(seconds))
        thread = _Rollups()
        thread.start()
        with_rollup.append(_enqueue_for(seconds))
        thread.stopping.set()
        thread.join()
        rollups += thread.done
    low, high = statistics.median(without), statistics.median(with_rollup)
    print(
        f"\nenqueue, one job per call, {rounds} rounds of {seconds:g} s each (median jobs/s):\n"
        f"  without the rollup          {low:8.0f}  (rounds: {_listed(without)})\n"
        f"  with a rollup every second  {high:8.0f}  (rounds: {_listed(with_rollup)}; "
        f"{rollups} rollups)\n"
        f"  difference                  {(high - low) / low * 100:+8.1f} %  (rounds without the "
        f"rollup spread ±{statistics.stdev(without) / low * 100:.1f} % around their median)"
    )


def _listed(rates: list[float]) -> str:
    return ", ".join(f"{rate:.0f}" for rate in rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--no-seed", action="store_true", help="reuse the seeded database")
    args = parser.parse_args()
    if not args.no_seed:
        seed()
    rollup_cost()
    pages(args.runs)
    enqueue_rates(args.rounds, args.seconds)


if __name__ == "__main__":
    main()
