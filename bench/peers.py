"""django-leasequeue beside PgQueuer, Procrastinate and Celery, measured in one run.

    pip install -e '.[bench]'
    python bench/peers.py [--jobs 30000] [--processes 2] [--concurrency 10] [--repeats 3]

Every system runs the same jobs with P worker processes x C slots, and is measured five ways:

1. N no-op jobs enqueued one per call (each call its own transaction), then drained: the
   enqueue rate, and the drain rate from the moment the workers start until all are done;
2. the same, enqueued with each system's bulk call;
3. N sync jobs that each insert one row through Django's ORM, drained;
4. the same job written ``async`` (the ORM's ``acreate``), drained, where a system has async
   jobs (not Celery); beside 3, what a sync job costs the workers over an async one;
5. pickup latency of idle workers: one job at a time, from the commit of its enqueue (or
   Celery's message sent) to the first line of the job, p50/p99.

Drains are also reported without the workers' start-up (first finished job to the last), as
start-up (Python imports, Django, connections) is a large part of a short drain. The default of
30,000 jobs makes each drain last several seconds: over 5,000 (about 2 s a drain) the same pair
of runs spread from 0.51 to 1.08 (issue 39), measuring start-up and noise.
A system whose package is missing is skipped. Everything runs in its own database (lq_peers,
created when missing; each system keeps its own tables) and Redis database 13 for Celery.
Prints a table and the ratios ours/PgQueuer, and writes bench/results/peers.json.
"""

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.peer_settings"
os.environ.setdefault("LQPEERS_REDIS_URL", "redis://127.0.0.1:6379/13")

from bench import peer_systems  # noqa: E402
from bench.peer_costs import MICROSECONDS, Costs, Meter  # noqa: E402
from bench.peer_systems import Bench, System  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "peers.json"
POLL = 0.025  # seconds between "how many are done?" looks: the same for every system
#: Idle seconds before each pickup sample, drawn at random (seeded) so that samples do not fall
#: in step with a system's own timers (PgQueuer flushes completions every ~0.1 s, say).
PICKUP_GAP = (0.02, 0.12)
PICKUP_WARMUP = 3  # pickup samples thrown away (first connections, imports)
DRAIN_TIMEOUT = 600

#: What makes the comparison unequal, printed with the figures and written to the results.
CAVEATS = [
    "PgQueuer will not cap a worker below twice its batch size: with its default batch of 10, "
    "each process may hold 20 jobs, not 10 (--pgqueuer-batch-size 5 gives it 10).",
    "Procrastinate fetches and finishes one job per query, each on a connection from a pool of "
    "4 per worker that is checked with a round trip at every checkout: its defaults.",
    "Celery has no async tasks and no record of finished tasks without a result backend: its "
    "no-op is sync (C threads per process), results are ignored, and completions are counted "
    "in memory and copied to Redis every 10 ms by a thread in each worker.",
    "Celery's enqueue is a Redis push, not a database transaction; its bulk path (group) still "
    "sends one message per task.",
    "django-leasequeue stores each job's return value and keeps finished jobs; PgQueuer moves "
    "them to its log table; Procrastinate keeps them; Celery keeps nothing.",
    "Drains start the workers after the queue is filled, so 'from start' includes each "
    "system's start-up (imports, Django, connections); the second table leaves it out.",
    "Sync jobs get C threads per process everywhere (PgQueuer and Procrastinate run them on "
    "asyncio's default executor, which is resized to C; its default is min(32, cores + 4)).",
    "Persistent Django connections for every system's write job: CONN_MAX_AGE=60, and for "
    "Celery, whose Django fix-up closes connections after each task regardless, "
    "CELERY_DB_REUSE_MAX=1000.",
    "Pickup is timed from the enqueuing process's clock read right after the commit (Celery: "
    "its after_task_publish signal), with the workers on one CPU and the enqueuer on the other; "
    "the enqueuer is still at times preempted in between (PostgreSQL, Redis, other tenants), "
    "so a few samples are short, even negative; they are kept.",
    "The benchmark counts finished jobs every 25 ms: a count(*) on PostgreSQL for the three "
    "PostgreSQL queues, a Redis MGET for Celery.",
    "Per-job costs (bench/peer_costs.py): PostgreSQL statements need pg_stat_statements in "
    "shared_preload_libraries; WAL bytes count the whole cluster and Redis commands the whole "
    "Redis server, so both are exact only on servers of the benchmark's own; 'drain less "
    "start-up' subtracts a drain of an empty queue, whose start-up CPU varies by tens of ms.",
]


#: label: (job kind, enqueued in bulk) of each drain, in the order they run.
DRAIN_LABELS = {
    "single": ("noop", False),
    "bulk": ("noop", True),
    "write": ("write", True),
    "awrite": ("awrite", True),
}


class DrainFailed(Exception):
    """A drain that did not finish every job once: reported, and left out of the medians."""


@dataclass
class Drain:
    enqueue: float  # jobs/s of the enqueue that filled the queue
    from_start: float  # jobs/s from worker start to the last job done
    steady: float  # jobs/s from the first finished job to the last
    startup: float  # seconds from worker start to the first finished job
    enqueue_costs: Costs  # per job, of the enqueue that filled the queue (bench/peer_costs.py)
    drain_costs: Costs  # per job, of the drain (worker start-up included)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=30000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--pickup-samples", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each figure (median)")
    parser.add_argument(
        "--figures",
        default="single,bulk,write,awrite",
        help="comma-separated drains to run: single (enqueue 1/call), bulk, write (sync), "
        "awrite (the write job written async)",
    )
    parser.add_argument("--no-pickup", action="store_true", help="leave out pickup latency")
    parser.add_argument(
        "--output", type=Path, default=RESULTS, help=f"results file (default: {RESULTS})"
    )
    parser.add_argument(
        "--pgqueuer-batch-size",
        type=int,
        default=10,
        help="PgQueuer's batch size (its default: 10); its cap per process is the larger of "
        "--concurrency and twice this",
    )
    parser.add_argument(
        "--systems",
        default=",".join(s.name for s in peer_systems.SYSTEMS),
        help="comma-separated names of the systems to run",
    )
    return parser.parse_args()


def setup_database() -> tuple[str, psycopg.Connection]:
    """Create the benchmark database when missing, migrate it (our tables, Procrastinate's and
    bench's), and return its DSN and an autocommit connection for counts and truncates."""
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    db = settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    server = f"postgresql://{db['USER']}{password}@{db['HOST']}:{db['PORT']}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]])
        if not exists.fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)
    dsn = f"{server}/{db['NAME']}"
    return dsn, psycopg.connect(dsn, autocommit=True)


def choose_systems(bench: Bench, names: str) -> tuple[list[System], dict[str, str]]:
    """The systems to run, set up; and those skipped, with the reason (printed)."""
    wanted = {name.strip().lower() for name in names.split(",")}
    systems, skipped = [], {}
    for cls in peer_systems.SYSTEMS:
        if cls.name.lower() not in wanted:
            continue
        system = cls(bench)
        reason = system.missing()
        if reason:
            skipped[system.name] = reason
            print(f"skipping {system.name}: {reason}", flush=True)
            continue
        system.setup()
        systems.append(system)
    return systems, skipped


def start_workers(
    system: System, burst: bool, logs: Path, cpu: int | None = None
) -> list[subprocess.Popen]:
    """Each in its own session, so that stopping one reaches its child processes too;
    all on CPU ``cpu`` when given (with their children)."""
    env = peer_systems.worker_env(system.bench)
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    workers = []
    for i, command in enumerate(system.worker_commands(burst)):
        command = [*pin, *command]
        with open(logs / f"{system.name}-{i}.log", "ab") as log:
            workers.append(
                subprocess.Popen(
                    command, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True
                )
            )
    return workers


def stop_workers(workers: list[subprocess.Popen], wait_for_exit: bool) -> None:
    """Let burst workers finish by themselves; SIGTERM what is left (the process we started:
    a supervisor stops its own children), and SIGKILL the whole session of what ignores it."""
    deadline = time.monotonic() + (60 if wait_for_exit else 0)
    for worker in workers:
        wait_quietly(worker, max(0.0, deadline - time.monotonic()))
    alive = [w for w in workers if w.poll() is None]
    for worker in alive:
        worker.terminate()
    for worker in alive:
        wait_quietly(worker, 60)
    for worker in workers:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)  # leftovers of its session, if any
        wait_quietly(worker, 10)


def wait_quietly(worker: subprocess.Popen, seconds: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        worker.wait(seconds)


def timed_enqueue(system: System, kind: str, jobs: int, bulk: bool) -> float:
    """Jobs/s of enqueueing ``jobs`` jobs: bulk calls of up to 5,000 jobs, or one per call."""
    numbers = range(jobs)
    started = time.perf_counter()
    if bulk:
        for start in range(0, jobs, 5000):
            system.enqueue_bulk(kind, numbers[start : start + 5000])
    else:
        system.enqueue_each(kind, numbers)
    return jobs / (time.perf_counter() - started)


def wait_done(
    system: System, jobs: int, workers: list[subprocess.Popen], meter: Meter | None = None
) -> tuple:
    """Poll the system's count of finished jobs until all are done.

    Returns (when the first finished jobs were seen, how many they were, when all were),
    in ``time.perf_counter`` seconds.
    """
    deadline = time.perf_counter() + DRAIN_TIMEOUT
    first = first_count = None
    while True:
        done, now = system.done(), time.perf_counter()
        if done and first is None:
            first, first_count = now, done
        if done >= jobs:
            return first, first_count, now
        exited = all(w.poll() is not None for w in workers)
        if now > deadline or (exited and system.done() < jobs):
            raise DrainFailed(f"{done} of {jobs} jobs done when the workers stopped")
        if meter is not None:
            meter.poll()
        time.sleep(POLL)


def reset(system: System) -> None:
    """Empty the system's queue and the write jobs' table."""
    system.reset()
    system.bench.sql.execute("TRUNCATE bench_peerrow")


def measure_drain(
    system: System, kind: str, jobs: int, bulk: bool, logs: Path, meter: Meter
) -> Drain:
    reset(system)
    meter.start()
    enqueue_rate = timed_enqueue(system, kind, jobs, bulk)
    # The new connection flushes the old backend's counters (outside the timing).
    enqueue_costs = meter.stop(reconnect=system.reconnect)
    system.analyze()
    meter.start()
    started = time.perf_counter()
    workers = start_workers(system, burst=system.burst, logs=logs)
    try:
        first, first_count, last = wait_done(system, jobs, workers, meter)
    finally:
        stop_workers(workers, wait_for_exit=system.burst)
    drain_costs = meter.stop()
    if kind in ("write", "awrite"):
        check_rows(system, jobs)
    steady = (jobs - first_count) / (last - first) if last > first else float("nan")
    return Drain(
        enqueue_rate,
        jobs / (last - started),
        steady,
        first - started,
        enqueue_costs.per_job(jobs, MICROSECONDS),
        drain_costs.per_job(jobs, MICROSECONDS),
    )


def measure_idle(system: System, logs: Path, meter: Meter) -> Costs | None:
    """What a drain of an empty queue costs (start-up, connections, shutdown), in total: the
    part of a drain's costs that does not grow with its jobs. None for workers that do not
    exit by themselves."""
    if not system.burst:
        return None
    reset(system)
    meter.start()
    workers = start_workers(system, burst=True, logs=logs)
    while any(w.poll() is None for w in workers):
        meter.poll()
        time.sleep(POLL)
    stop_workers(workers, wait_for_exit=True)
    return meter.stop()


def check_rows(system: System, jobs: int) -> None:
    rows = system.count("SELECT count(*) FROM bench_peerrow")
    if rows != jobs:
        raise DrainFailed(f"{rows} rows written by {jobs} write jobs")


def measure_pickup(system: System, samples: int, logs: Path) -> list[float]:
    """Milliseconds from the commit of each enqueue to the start of its job, with the workers
    idle; the job notes its start time in a Redis list (bench/peer_apps/common.py).

    The workers run on one CPU and this process on another: otherwise the woken worker often
    preempts this process between the commit and its clock read, and the sample comes out
    short (even negative).
    """
    from bench.peer_apps.common import STAMPS_KEY, redis_client

    reset(system)
    stamps = redis_client()
    stamps.delete(STAMPS_KEY)
    gaps = random.Random(samples)
    cpus = sorted(os.sched_getaffinity(0))
    workers = start_workers(system, burst=False, logs=logs, cpu=cpus[-1] if cpus[1:] else None)
    if cpus[1:]:
        os.sched_setaffinity(0, {cpus[0]})
    try:
        system.enqueue_each("stamp", [-1])
        pop_stamp(system.name, stamps, -1, timeout=120)  # the workers are up
        latencies = []
        for n in range(samples + PICKUP_WARMUP):
            time.sleep(gaps.uniform(*PICKUP_GAP))
            enqueued = system.enqueue_marked("stamp", n)
            started = pop_stamp(system.name, stamps, n, timeout=30)
            if n >= PICKUP_WARMUP:
                latencies.append((started - enqueued) * 1000)
    finally:
        os.sched_setaffinity(0, cpus)
        stop_workers(workers, wait_for_exit=False)
    return latencies


def pop_stamp(name: str, stamps, n: int, timeout: float) -> float:
    """Wait for the start time that stamp job ``n`` notes."""
    from bench.peer_apps.common import STAMPS_KEY

    popped = stamps.blpop([STAMPS_KEY], timeout=timeout)
    if popped is None:
        raise SystemExit(f"{name}: job {n} did not start within {timeout}s")
    number, started = popped[1].decode().split()
    if int(number) != n:
        raise SystemExit(f"{name}: expected the start of job {n}, got {number}")
    return float(started)


def run_all(systems: list[System], args: argparse.Namespace, logs: Path, meter: Meter) -> dict:
    """Every figure for every system, figure by figure (so a noisy minute hits all systems
    of a figure alike), ``--repeats`` times; returns the raw runs per system."""
    runs = {
        s.name: {
            **{label: [] for label in DRAIN_LABELS},
            "pickup": [],
            "failed": [],
            "idle": [],
        }
        for s in systems
    }
    for repeat in range(args.repeats):
        for system in systems:
            idle = measure_idle(system, logs, meter)
            if idle is not None:
                runs[system.name]["idle"].append(idle)
        for label, (kind, bulk) in DRAIN_LABELS.items():
            if label not in args.figures.split(","):
                continue
            for system in systems:
                if kind not in system.kinds:
                    continue
                step = f"[{repeat + 1}/{args.repeats}] {system.name} {label}"
                try:
                    drain = measure_drain(system, kind, args.jobs, bulk, logs, meter)
                except DrainFailed as exc:
                    runs[system.name]["failed"].append(f"{label}, run {repeat + 1}: {exc}")
                    print(f"{step}: FAILED, {exc} (worker logs in {logs})", flush=True)
                    continue
                runs[system.name][label].append(drain)
                print(f"{step}: {fmt(drain)}", flush=True)
        if args.no_pickup:
            continue
        for system in systems:
            latencies = measure_pickup(system, args.pickup_samples, logs)
            runs[system.name]["pickup"].extend(latencies)
            q = statistics.quantiles(latencies, n=100)
            print(
                f"[{repeat + 1}/{args.repeats}] {system.name} pickup: p50 {q[49]:.2f} ms, "
                f"p99 {q[98]:.2f} ms",
                flush=True,
            )
    return runs


def fmt(drain: Drain) -> str:
    return (
        f"enqueue {drain.enqueue:,.0f}/s, drain {drain.from_start:,.0f}/s from start "
        f"({drain.steady:,.0f}/s after {drain.startup:.2f}s start-up)"
    )


def figures(run: dict) -> dict[str, float]:
    """The medians of one system's runs, keyed as in the results file (NaN: no run finished)."""

    def med(labels: tuple[str, ...], field: str) -> float:
        values = [getattr(d, field) for label in labels for d in run[label]]
        return statistics.median(values) if values else math.nan

    q = statistics.quantiles(run["pickup"], n=100) if run["pickup"][1:] else [math.nan] * 99
    return {
        "single_enqueue": med(("single",), "enqueue"),
        "drain_single": med(("single",), "from_start"),
        "bulk_enqueue": med(("bulk",), "enqueue"),
        "drain_bulk": med(("bulk",), "from_start"),
        "drain_write": med(("write",), "from_start"),
        "drain_awrite": med(("awrite",), "from_start"),
        "steady_single": med(("single",), "steady"),
        "steady_bulk": med(("bulk",), "steady"),
        "steady_write": med(("write",), "steady"),
        "steady_awrite": med(("awrite",), "steady"),
        "startup_s": med(tuple(DRAIN_LABELS), "startup"),
        "pickup_p50_ms": q[49],
        "pickup_p99_ms": q[98],
    }


#: (key, heading, format) of the two printed tables; rates in jobs/s.
MAIN_COLUMNS = [
    ("single_enqueue", "enqueue 1/call", "{:,.0f}"),
    ("drain_single", "drain (1/call)", "{:,.0f}"),
    ("bulk_enqueue", "enqueue bulk", "{:,.0f}"),
    ("drain_bulk", "drain (bulk)", "{:,.0f}"),
    ("drain_write", "drain (write)", "{:,.0f}"),
    ("drain_awrite", "drain (async write)", "{:,.0f}"),
    ("pickup_p50_ms", "pickup p50 ms", "{:.2f}"),
    ("pickup_p99_ms", "pickup p99 ms", "{:.2f}"),
]
STEADY_COLUMNS = [
    ("startup_s", "start-up s", "{:.2f}"),
    ("steady_single", "drain (1/call)", "{:,.0f}"),
    ("steady_bulk", "drain (bulk)", "{:,.0f}"),
    ("steady_write", "drain (write)", "{:,.0f}"),
    ("steady_awrite", "drain (async write)", "{:,.0f}"),
]


def cell(value: float | None, fmt_: str) -> str:
    return "-" if value is None or math.isnan(value) else fmt_.format(value)


#: (Costs field, heading, format) of the per-job cost tables.
COST_COLUMNS = [
    ("enqueuer_cpu_us", "enqueuer CPU µs", "{:,.0f}"),
    ("worker_cpu_us", "worker CPU µs", "{:,.0f}"),
    ("backend_cpu_us", "PG backend CPU µs", "{:,.0f}"),
    ("statements", "PG statements", "{:.2f}"),
    ("transactions", "PG commits", "{:.2f}"),
    ("redis_commands", "Redis commands", "{:.2f}"),
    ("wal_bytes", "WAL bytes", "{:,.0f}"),
]
COST_LABELS = {
    "single": "no-op jobs enqueued one per call",
    "bulk": "no-op jobs enqueued in bulk",
    "write": "write jobs enqueued in bulk",
    "awrite": "write jobs written async, enqueued in bulk",
}


def median_costs(costs: list[Costs]) -> Costs:
    """Field by field; None where no run measured it."""
    values = {}
    for key, _, _ in COST_COLUMNS:
        measured = [getattr(c, key) for c in costs if getattr(c, key) is not None]
        values[key] = statistics.median(measured) if measured else None
    return Costs(**values)


def sync_over_async(run: dict, jobs: int) -> float | None:
    """Worker CPU a job of the sync write drain over the async one's (start-up left out when
    an empty drain was measured); None without both."""
    cpu = {}
    for label in ("write", "awrite"):
        rows = dict(cost_rows(run, label, jobs))
        costs = rows.get("drain less start-up") or rows.get("drain")
        if costs is None or not costs.worker_cpu_us:
            return None
        cpu[label] = costs.worker_cpu_us
    return cpu["write"] / cpu["awrite"]


def cost_rows(run: dict, label: str, jobs: int) -> list[tuple[str, Costs]]:
    """(phase, per-job medians) of one system's drains of ``label``: the enqueue, the drain,
    and the drain less what a drain of an empty queue costs (its start-up and shutdown)."""
    drains = run[label]
    if not drains:
        return []
    drain = median_costs([d.drain_costs for d in drains])
    rows = [("enqueue", median_costs([d.enqueue_costs for d in drains])), ("drain", drain)]
    if run["idle"]:
        idle = median_costs(run["idle"]).per_job(jobs, MICROSECONDS)
        rows.append(("drain less start-up", drain.minus(idle)))
    return rows


def cost_table(systems: list[System], runs: dict, label: str, jobs: int) -> str:
    rows = [
        (system.name, phase, costs)
        for system in systems
        for phase, costs in cost_rows(runs[system.name], label, jobs)
    ]
    headings = ["system", "phase", *(heading for _, heading, _ in COST_COLUMNS)]
    body = [
        [name, phase, *(cell(getattr(costs, key), fmt_) for key, _, fmt_ in COST_COLUMNS)]
        for name, phase, costs in rows
    ]
    widths = [max(len(row[i]) for row in [headings, *body]) for i in range(len(headings))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in [headings, ["-" * w for w in widths], *body]
    )


def table(rows: list[tuple[str, str, dict]], columns: list[tuple[str, str, str]]) -> str:
    headings = ["system", "version", *(heading for _, heading, _ in columns)]
    body = [
        [name, version, *(cell(values[key], fmt_) for key, _, fmt_ in columns)]
        for name, version, values in rows
    ]
    widths = [max(len(row[i]) for row in [headings, *body]) for i in range(len(headings))]
    lines = [headings, ["-" * w for w in widths], *body]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def ratios(results: dict[str, dict]) -> dict[str, float]:
    """Ours / PgQueuer for every figure (above 1: ours is higher, which for latency is worse)."""
    ours, pgq = results.get("django-leasequeue"), results.get("PgQueuer")
    if not ours or not pgq:
        return {}
    return {key: ours[key] / pgq[key] for key in ours}


def print_report(systems: list[System], runs: dict, results: dict[str, dict], jobs: int) -> None:
    rows = [(s.name, s.version(), results[s.name]) for s in systems]
    print(f"\njobs/s; drains from worker start to the last of {jobs:,} jobs done:")
    print(table(rows, MAIN_COLUMNS))
    print("\ndrains without start-up (first finished job to the last), jobs/s:")
    print(table(rows, STEADY_COLUMNS))
    versus = ratios(results)
    if versus:
        print("\nours / PgQueuer (latency: below 1 is ours faster):")
        for key, heading, _ in [*MAIN_COLUMNS, *STEADY_COLUMNS[1:]]:
            steady = " without start-up" if key.startswith("steady") else ""
            print(f"  {heading}{steady}: {cell(versus[key], '{:.2f}')}")
    else:
        print("\nno ratios: ours and PgQueuer were not both measured")
    for label, what in COST_LABELS.items():
        if any(runs[s.name][label] for s in systems):
            print(f"\nper job, {what} (medians; bench/peer_costs.py says how each is read):")
            print(cost_table(systems, runs, label, jobs))
    for system in systems:
        ratio = sync_over_async(runs[system.name], jobs)
        if ratio is not None:
            print(
                f"\n{system.name}: worker CPU of a sync write job / the same job written async "
                f"(drain less start-up, medians): {ratio:.2f}"
            )
    failed = [(s.name, f) for s in systems for f in runs[s.name]["failed"]]
    if failed:
        print("\nfailed drains (left out of the medians):")
        for name, failure in failed:
            print(f"  - {name} {failure}")
    print("\ncaveats:")
    for caveat in CAVEATS:
        print(f"  - {caveat}")


def environment(bench: Bench, args: argparse.Namespace) -> dict:
    """Settings and versions of the run, for the results file."""
    from bench.peer_apps.common import redis_client

    server = bench.sql.execute("SHOW server_version").fetchone()[0]
    sync_commit = bench.sql.execute("SHOW synchronous_commit").fetchone()[0]
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "jobs": args.jobs,
        "processes": args.processes,
        "concurrency": args.concurrency,
        "pickup_samples": args.pickup_samples,
        "repeats": args.repeats,
        "bulk_chunk": 5000,
        "poll_seconds": POLL,
        "cpus": os.cpu_count(),
        "postgresql": server,
        "synchronous_commit": sync_commit,
        "redis": redis_client().info("server")["redis_version"],
        "python": platform.python_version(),
        "django": importlib.metadata.version("django"),
        "psycopg": importlib.metadata.version("psycopg"),
    }


def no_nan(values: dict[str, float]) -> dict[str, float | None]:
    """JSON has no NaN: a figure that no run produced is null."""
    return {key: None if math.isnan(value) else value for key, value in values.items()}


def write_results(bench, args, systems, skipped, runs, results) -> None:
    report = {
        "settings": environment(bench, args),
        "systems": {
            s.name: {
                "version": s.version(),
                "settings": s.settings(),
                "figures": no_nan(results[s.name]),
                "failed_drains": runs[s.name]["failed"],
                "drains": {
                    label: [asdict(d) for d in runs[s.name][label]] for label in DRAIN_LABELS
                },
                "sync_over_async_write_worker_cpu": sync_over_async(runs[s.name], args.jobs),
                "pickup_ms": [round(ms, 3) for ms in runs[s.name]["pickup"]],
                "idle_drain_costs": [asdict(c) for c in runs[s.name]["idle"]],
                "costs_per_job": {
                    label: {
                        phase: asdict(c) for phase, c in cost_rows(runs[s.name], label, args.jobs)
                    }
                    for label in COST_LABELS
                },
            }
            for s in systems
        },
        "ratios_ours_over_pgqueuer": no_nan(ratios(results)),
        "skipped": skipped,
        "caveats": CAVEATS,
    }
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.output}")


def server_dsn(dsn: str) -> str:
    return dsn.rsplit("/", 1)[0]


def redis_servers(peer_url: str) -> list:
    """A client of each Redis server the systems use (ours: the Django cache's; Celery and the
    stamps: ``LQPEERS_REDIS_URL``), one per server."""
    import redis
    from django.conf import settings

    urls = [settings.CACHES["default"]["LOCATION"], peer_url]
    clients = {}
    for url in urls:
        client = redis.Redis.from_url(url)
        kwargs = client.connection_pool.connection_kwargs
        clients.setdefault((kwargs.get("host"), kwargs.get("port")), client)
    return list(clients.values())


def main() -> None:
    args = parse_args()
    dsn, sql = setup_database()
    redis_url = os.environ["LQPEERS_REDIS_URL"]
    bench = Bench(args.processes, args.concurrency, sql, dsn, redis_url, args.pgqueuer_batch_size)
    systems, skipped = choose_systems(bench, args.systems)
    logs = Path(tempfile.mkdtemp(prefix="lqpeers-logs-"))
    settings = environment(bench, args)
    print(
        f"jobs={args.jobs} processes={args.processes} concurrency={args.concurrency} "
        f"cpus={settings['cpus']} PostgreSQL {settings['postgresql']} "
        f"synchronous_commit={settings['synchronous_commit']} Redis {settings['redis']}; "
        f"worker logs in {logs}",
        flush=True,
    )
    meter = Meter(bench, server_dsn(dsn), dsn.rsplit("/", 1)[1], redis_servers(redis_url))
    if not meter.pgss:
        print("PG statements: pg_stat_statements is not loaded (shared_preload_libraries)")
    if not meter.proc:
        print("PG backend CPU: /proc of the server's backends is not readable here")
    runs = run_all(systems, args, logs, meter)
    meter.close()
    results = {s.name: figures(runs[s.name]) for s in systems}
    print_report(systems, runs, results, args.jobs)
    write_results(bench, args, systems, skipped, runs, results)


if __name__ == "__main__":
    main()
