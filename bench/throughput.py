"""Throughput and latency of django-leasequeue against a raw-SQL ceiling, in one run.

    python bench/throughput.py [--jobs 20000] [--processes 2] [--concurrency 10]
    python bench/throughput.py --scale [--memory-jobs 1000000]   # bench/scale.py
    python bench/throughput.py --schedule-cost   # drain with 100 schedules declared vs none
    python bench/throughput.py --claim-cost   # queue control's claims vs the baseline's

Prints bulk enqueue jobs/s (median of --repeats runs, beside a raw COPY of the same rows),
drain jobs/s with P processes x C concurrency (leases, heartbeats and fencing on), pickup
latency p50/p99 of idle workers (jobs enqueued one at a time, Redis signals on), and a minimal
raw-SQL loop (batch SKIP LOCKED claim + update, no framework) over the same jobs as the drain
ceiling, with our ratios. Beside each drain figure: the worker CPU (user + system) per job,
from the rusage of the ``runworkers --burst`` processes, less that of an empty burst (start-up,
supervisor). The async and sync drains run ``--drain-repeats`` times, alternating, and report
medians, with the sync task's worker CPU over the async one's (target: at most 1.1). Uses its
own database (lq_bench); writes bench/results/latest.json and docs/img/benchmark.svg.
"""

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from bench import plot
from bench.harness import (
    bulk_enqueue,
    reset,
    setup_database,
    start_workers,
    stop_workers,
    wait_all_finished,
)
from bench.plot import RESULTS

SCALE_RESULTS = RESULTS.with_name("scale.json")
CLAIM_COST_RESULTS = RESULTS.with_name("claim_cost.json")


def drain_rate(jobs: int) -> float:
    """Jobs per second between the first claim and the last completion (database clock)."""
    from django.db.models import Max, Min

    from django_leasequeue.models import Job

    span = Job.objects.aggregate(first=Min("last_attempted_at"), last=Max("finished_at"))
    return jobs / (span["last"] - span["first"]).total_seconds()


def measure_bulk_enqueue(jobs: int, task, repeats: int) -> tuple[float, float]:
    """Median jobs/s of ``repeats`` runs of enqueue_many, and of raw COPY of the same rows.

    The two alternate run by run, so that a slow moment of a noisy machine hits both.
    """
    ours, raw = [], []
    for _ in range(repeats):
        reset()
        ours.append(bulk_enqueue(jobs, task))
        reset()
        raw.append(raw_copy(jobs))
    return statistics.median(ours), statistics.median(raw)


def raw_copy(jobs: int) -> float:
    """The floor of any enqueue: COPY of minimal job rows (id, path, args), no framework."""
    import uuid

    from django.db import connection

    started = time.perf_counter()
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy("COPY leasequeue_job (id, task_path, args, kwargs) FROM STDIN") as copy,
    ):
        for n in range(jobs):
            copy.write_row((uuid.uuid4(), "bench.tasks.anoop", f"[{n}]", "{}"))
    return jobs / (time.perf_counter() - started)


def children_cpu() -> float:
    """CPU seconds (user + system) of the child processes waited for so far, and theirs.

    The supervisor waits for its worker processes, so a finished ``runworkers`` counts them all.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def burst_cpu(processes: int, concurrency: int) -> float:
    """CPU seconds of one ``runworkers --burst`` over an empty queue: start-up and supervisor."""
    reset()
    before = children_cpu()
    start_workers(processes, concurrency, "--burst").wait(120)
    return children_cpu() - before


def measure_drain(
    jobs: int, processes: int, concurrency: int, task, idle_cpu: float
) -> tuple[float, float]:
    """Drain jobs/s, and the workers' CPU seconds per job (less ``idle_cpu``, an empty burst)."""
    reset()
    bulk_enqueue(jobs, task)
    before = children_cpu()
    workers = start_workers(processes, concurrency, "--burst")
    wait_all_finished(jobs)
    workers.wait(60)
    cpu = children_cpu() - before - idle_cpu
    return drain_rate(jobs), cpu / jobs


def measure_drain_pair(
    jobs: int, processes: int, concurrency: int, tasks: tuple, idle_cpu: float, repeats: int
) -> list[tuple[float, float]]:
    """(median jobs/s, median worker CPU seconds a job) of each task's drain, the tasks taking
    turns ``repeats`` times, so that a slow minute of a shared machine hits each alike."""
    runs: list[list[tuple[float, float]]] = [[] for _ in tasks]
    for _ in range(repeats):
        for i, task in enumerate(tasks):
            runs[i].append(measure_drain(jobs, processes, concurrency, task, idle_cpu))
    return [
        (statistics.median(r for r, _ in each), statistics.median(c for _, c in each))
        for each in runs
    ]


def measure_schedule_cost(jobs: int, processes: int, concurrency: int, task, rounds: int) -> None:
    """Drain jobs/s of long-running workers (a burst schedules nothing) with 100 schedules
    declared and with none, alternating round by round; and the time of one schedule check."""
    from django.db import connection

    from django_leasequeue.sql.executor import execute
    from django_leasequeue.sql.schedules import due_schedules

    rates: dict[bool, list[float]] = {False: [], True: []}
    for round_ in range(rounds):
        # Which goes first alternates too: a slow moment of a shared machine hits both alike.
        for declared in (False, True) if round_ % 2 == 0 else (True, False):
            reset()
            with connection.cursor() as cursor:
                cursor.execute("TRUNCATE leasequeue_schedule")
            bulk_enqueue(jobs, task)
            env = {"LEASEQUEUE_BENCH_SCHEDULES": "1"} if declared else {}
            workers = start_workers(processes, concurrency, env=env)
            wait_all_finished(jobs)
            stop_workers(workers)
            rates[declared].append(drain_rate(jobs))
    none, hundred = statistics.median(rates[False]), statistics.median(rates[True])
    print(
        f"drain with 0 schedules: {none:,.0f} jobs/s; with 100 schedules: {hundred:,.0f} jobs/s "
        f"(ratio {hundred / none:.3f}; medians of {rounds} rounds: "
        f"{[round(r) for r in rates[False]]} vs {[round(r) for r in rates[True]]})",
        flush=True,
    )
    paths = [f"bench.schedules.tasks.daily_{n:03d}" for n in range(100)]
    statement = due_schedules(paths)
    execute(statement)
    checks = 2000
    started = time.perf_counter()
    for _ in range(checks):
        execute(statement)
    elapsed = (time.perf_counter() - started) / checks
    print(
        f"one schedule check (100 schedules, none due, round trip included): "
        f"{elapsed * 1e6:.0f} µs; a worker makes about one a second",
        flush=True,
    )


def measure_pickup(samples: int, processes: int, concurrency: int, task) -> list[float]:
    """Milliseconds from enqueue (commit) to claim, workers idle and waiting on Redis."""
    from django_leasequeue.models import Job

    reset()
    workers = start_workers(processes, concurrency)
    time.sleep(3)  # workers up and blocked on Redis
    try:
        latencies = []
        for n in range(samples):
            job_id = task.enqueue(n).id
            time.sleep(0.02)
            while True:
                job = Job.objects.only("enqueued_at", "last_attempted_at").get(pk=job_id)
                if job.last_attempted_at:
                    break
                time.sleep(0.005)
            latencies.append((job.last_attempted_at - job.enqueued_at).total_seconds() * 1000)
    finally:
        stop_workers(workers)
    return latencies


def _raw_worker(dsn: dict, batch: int, counter) -> None:
    import psycopg

    claim = """
        WITH picked AS (
            SELECT id FROM leasequeue_job WHERE status IN ('queued', 'retrying')
            AND flow_key IS NULL AND expires_at IS NULL  -- the claim index's predicate
            AND run_after <= now() ORDER BY priority DESC, run_after, id
            LIMIT %s FOR UPDATE SKIP LOCKED)
        UPDATE leasequeue_job j SET status = 'running' FROM picked
        WHERE j.id = picked.id RETURNING j.id"""
    finish = (
        "UPDATE leasequeue_job SET status = 'succeeded', finished_at = now() WHERE id = ANY(%s)"
    )
    with psycopg.connect(**dsn, autocommit=True) as conn:
        while True:
            ids = [row[0] for row in conn.execute(claim, [batch])]
            if not ids:
                return
            conn.execute(finish, [ids])
            with counter.get_lock():
                counter.value += len(ids)


def measure_raw_ceiling(jobs: int, processes: int, concurrency: int, task) -> float:
    from django.conf import settings

    reset()
    bulk_enqueue(jobs, task)
    db = settings.DATABASES["default"]
    dsn = {"host": db["HOST"], "port": db["PORT"], "user": db["USER"], "dbname": db["NAME"]}
    counter = multiprocessing.Value("i", 0)
    workers = [
        multiprocessing.Process(target=_raw_worker, args=(dsn, concurrency, counter))
        for _ in range(processes)
    ]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.value == jobs, counter.value
    return jobs / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--pickup-samples", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5, help="bulk enqueue runs (median)")
    parser.add_argument(
        "--drain-repeats", type=int, default=3, help="runs of each drain, alternating (median)"
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="only the scale figures: drain on a loaded table, one worker's memory over time",
    )
    parser.add_argument(
        "--memory-jobs", type=int, default=1_000_000, help="jobs of the long memory run"
    )
    parser.add_argument(
        "--schedule-cost",
        action="store_true",
        help="only drain with 100 schedules declared vs none (median of --repeats rounds)",
    )
    parser.add_argument(
        "--claim-cost",
        action="store_true",
        help="only queue control's cost: each claim statement beside the baseline's, a paused "
        "and an expired backlog, the enqueue with and without the per-queue claim index",
    )
    args = parser.parse_args()
    setup_database()
    from bench.tasks import anoop, noop

    if args.schedule_cost:
        measure_schedule_cost(args.jobs, args.processes, args.concurrency, anoop, args.repeats)
        return

    if args.claim_cost:
        from bench import claim_cost

        figures = claim_cost.run(args.jobs)
        CLAIM_COST_RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
        return

    if args.scale:
        from bench import scale

        figures = scale.run(args.jobs, args.processes, args.concurrency, args.memory_jobs)
        SCALE_RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
        return

    p, c = args.processes, args.concurrency
    print(f"jobs={args.jobs} processes={p} concurrency={c} cpus={os.cpu_count()}", flush=True)
    ceiling = measure_raw_ceiling(args.jobs, p, c, anoop)
    print(f"raw SQL ceiling (SKIP LOCKED batch {c}, {p} procs): {ceiling:,.0f} jobs/s", flush=True)
    enqueue_rate, copy_rate = measure_bulk_enqueue(args.jobs, anoop, args.repeats)
    print(
        f"bulk enqueue (enqueue_many, chunks of 5000, one transaction, median of {args.repeats}): "
        f"{enqueue_rate:,.0f} jobs/s; raw COPY of the same rows: {copy_rate:,.0f} jobs/s "
        f"(ours = {enqueue_rate / copy_rate:.0%})",
        flush=True,
    )
    idle_cpu = min(burst_cpu(p, c) for _ in range(3))
    print(f"runworkers --burst on an empty queue: {idle_cpu:.2f} s CPU", flush=True)
    (drain_async, cpu_async), (drain_sync, cpu_sync) = measure_drain_pair(
        args.jobs, p, c, (anoop, noop), idle_cpu, args.drain_repeats
    )
    print(
        f"drain, async no-op task (median of {args.drain_repeats}): {drain_async:,.0f} jobs/s = "
        f"{drain_async / ceiling:.0%} of the raw ceiling; "
        f"worker CPU per job: {cpu_async * 1e6:.0f} µs",
        flush=True,
    )
    print(
        f"drain, sync no-op task (threads, median of {args.drain_repeats}): "
        f"{drain_sync:,.0f} jobs/s = {drain_sync / ceiling:.0%} of the raw ceiling; "
        f"worker CPU per job: {cpu_sync * 1e6:.0f} µs, {cpu_sync / cpu_async:.2f}x the async "
        f"task's",
        flush=True,
    )
    latencies = measure_pickup(args.pickup_samples, p, c, anoop)
    q = statistics.quantiles(latencies, n=100)
    print(
        f"pickup latency (idle workers, Redis signals, n={len(latencies)}): "
        f"p50 {q[49]:.2f} ms, p99 {q[98]:.2f} ms, max {max(latencies):.2f} ms",
        flush=True,
    )
    results = {
        "jobs": args.jobs,
        "processes": p,
        "concurrency": c,
        "cpus": os.cpu_count(),
        "figures": {
            "raw_ceiling": ceiling,
            "bulk_enqueue": enqueue_rate,
            "raw_copy": copy_rate,
            "drain_async": drain_async,
            "drain_sync": drain_sync,
        },
        "pickup_ms": {"p50": q[49], "p99": q[98], "max": max(latencies)},
        # Worker CPU (user + system) per job, less an empty burst's start-up and supervisor.
        "worker_cpu_us_per_job": {"drain_async": cpu_async * 1e6, "drain_sync": cpu_sync * 1e6},
        "worker_cpu_sync_over_async": cpu_sync / cpu_async,
        "drain_repeats": args.drain_repeats,
        "idle_burst_cpu_s": idle_cpu,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    plot.main()


if __name__ == "__main__":
    main()
