"""``throughput.py --scale``: the drain rate on a loaded table, and one worker's memory over a
long run, each beside its own baseline measured in the same run.

- drain: N no-op jobs on an empty table, then N more on a table also holding 1,000,000 finished
  jobs and 100,000 jobs due tomorrow (the claim index must keep both out of the way);
- memory: the peak resident size of one worker process (``--processes 1``) that ran 10,000
  jobs, then of one that ran 1,000,000 (nothing may grow with the number of jobs run).
"""

import statistics
import subprocess
import sys
import time

from bench import harness

# Rows put in the table before the second drain: finished long ago, and due tomorrow.
FINISHED_ROWS = 1_000_000
FUTURE_ROWS = 100_000


def load_table(finished: int, future: int) -> None:
    """Fill the job table with finished and future jobs, in bulk SQL (no framework)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO leasequeue_job (id, task_path, args, kwargs, status, run_after,
                                        enqueued_at, started_at, finished_at, attempt, result)
            SELECT gen_random_uuid(), 'bench.tasks.anoop', jsonb_build_array(n), '{}',
                   'succeeded', now() - interval '2 days', now() - interval '2 days',
                   now() - interval '2 days', now() - interval '2 days', 1, to_jsonb(n)
            FROM generate_series(1, %s) AS n
            """,
            [finished],
        )
        cursor.execute(
            """
            INSERT INTO leasequeue_job (id, task_path, args, kwargs, run_after)
            SELECT gen_random_uuid(), 'bench.tasks.anoop', jsonb_build_array(n), '{}',
                   now() + interval '1 day'
            FROM generate_series(1, %s) AS n
            """,
            [future],
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE leasequeue_job")


def drain_new_jobs(jobs: int, processes: int, concurrency: int, task) -> float:
    """Enqueue ``jobs`` more, drain them with ``--burst``; jobs/s over those jobs only."""
    from django.db.models import Max, Min

    from django_leasequeue.models import Job

    started = time.time()
    harness.bulk_enqueue(jobs, task)
    fresh = Job.objects.filter(enqueued_at__gte=throughput_start(started))
    harness.start_workers(processes, concurrency, "--burst").wait(3600)
    assert fresh.filter(status="succeeded").count() == jobs, "not every new job succeeded"
    span = fresh.aggregate(first=Min("last_attempted_at"), last=Max("finished_at"))
    return jobs / (span["last"] - span["first"]).total_seconds()


def throughput_start(started: float):
    from datetime import UTC, datetime, timedelta

    return datetime.fromtimestamp(started, UTC) - timedelta(seconds=1)


def peak_worker_rss_mib(jobs: int, concurrency: int, task) -> float:
    """Peak RSS (MiB) of one worker process that drained ``jobs`` no-op jobs.

    Run under a small wrapper process whose only children are that ``runworkers`` and its
    worker, so its children's peak RSS is the worker's own.
    """
    harness.reset()
    for start in range(0, jobs, 100_000):
        harness.bulk_enqueue(min(100_000, jobs - start), task)
    wrapper = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    command = [sys.executable, "-m", "django", "runworkers", "--processes", "1"]
    command += ["--concurrency", str(concurrency), "--burst", "-v", "0"]
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *command],
        cwd=harness.ROOT,
        env=harness.worker_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.split()[-1]) / 1024


def run(jobs: int, processes: int, concurrency: int, memory_jobs: int) -> dict[str, float]:
    """Empty and loaded drains alternate, twice (a slow moment of a noisy machine hits both);
    the medians are compared."""
    from bench.tasks import anoop

    empty, loaded = [], []
    for _ in range(2):
        harness.reset()
        empty.append(drain_new_jobs(jobs, processes, concurrency, anoop))
        harness.reset()
        load_table(FINISHED_ROWS, FUTURE_ROWS)
        loaded.append(drain_new_jobs(jobs, processes, concurrency, anoop))
        print(f"scale: drain, empty table {empty[-1]:,.0f} jobs/s, loaded {loaded[-1]:,.0f}")
    empty_rate, loaded_rate = statistics.median(empty), statistics.median(loaded)
    print(
        f"scale: drain beside {FINISHED_ROWS:,} finished and {FUTURE_ROWS:,} future jobs: "
        f"{loaded_rate:,.0f} jobs/s = {loaded_rate / empty_rate:.0%} of the empty table's "
        f"({empty_rate:,.0f} jobs/s)",
        flush=True,
    )
    small = peak_worker_rss_mib(10_000, concurrency, anoop)
    large = peak_worker_rss_mib(memory_jobs, concurrency, anoop)
    print(
        f"scale: one worker's peak RSS after 10,000 jobs {small:.1f} MiB, after "
        f"{memory_jobs:,} jobs {large:.1f} MiB = {large / small:.2f}x",
        flush=True,
    )
    return {
        "drain_empty": empty_rate,
        "drain_loaded": loaded_rate,
        "rss_mib_10k": small,
        "rss_mib_long": large,
        "memory_jobs": memory_jobs,
    }
