"""Drains of big backlogs, quiet and under a held snapshot, and a steady run under one: ours
beside PgQueuer, each pair in the same run (issue 39).

    pip install -e '.[bench]'
    python bench/backlog.py [--sizes 5000,50000,500000] [--modes quiet,snapshot]
                            [--steady-seconds 600] [--steady-rate 400]

For each backlog size and mode, every system in turn: fill its queue with write jobs (bulk
calls of 5,000), ``ANALYZE``, optionally open the snapshot, start P worker processes x C slots,
and watch the drain. Ours runs as deployed (``runworkers`` without ``--burst``: a burst takes
no wakeups, so every claim would go through the claim index); ``--poll-only`` adds ours with
no wakeups at all, the claim of a Redis outage. "Snapshot held" is an idle ``REPEATABLE READ``
transaction (one that has read, so its snapshot is taken) open on the job database for the
whole drain: a report, a ``pg_dump``, a forgotten ``BEGIN``. While it is open, vacuum removes
none of the rows that the drain makes dead.

Per tenth of each drain (the time the tenth's last job was counted as done): jobs/s over that
tenth, the queue table's dead tuples (``pg_stat_user_tables``) and the size of its indexes.
A drain longer than ``--max-drain-seconds`` is stopped and reported over the tenths it reached.

The steady run enqueues write jobs one per call at ``--steady-rate`` per second for
``--steady-seconds`` with the snapshot held, plus one ``stamp`` job every 0.1 s whose start the
job notes in Redis (as bench/peers.py's pickup): per tenth of the run, the jobs done, the pickup
p50/p99 of the stamp jobs, dead tuples and index sizes.

Runs in its own database (``LQPEERS_DATABASE``, default ``lq_backlog``), Redis database 12 for
the stamps, and writes bench/results/backlog.json.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LQPEERS_DATABASE", "lq_backlog")
os.environ.setdefault("LQPEERS_REDIS_URL", "redis://127.0.0.1:6379/12")

from bench import peer_systems, peers  # noqa: E402
from bench.peer_systems import Bench, System  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "backlog.json"
TENTHS = 10


@dataclass
class Tenth:
    """One tenth of a drain (or of the steady run)."""

    jobs_per_s: float
    dead_tuples: int
    index_mib: float
    pickup_p50_ms: float | None = None
    pickup_p99_ms: float | None = None
    enqueued_per_s: float | None = None  # the steady run's achieved enqueue rate


@dataclass
class DrainRun:
    system: str
    backlog: int
    mode: str
    enqueue_per_s: float
    jobs_per_s: float  # over the tenths reached, from the first done job to the last
    finished: bool  # every job done within --max-drain-seconds
    tenths: list[Tenth] = field(default_factory=list)


class LeaseQueueServing(peer_systems.LeaseQueue):
    """Ours as deployed: ``runworkers`` without ``--burst``, stopped once every job is done.
    A burst takes no wakeups (it polls until nothing is due), so it would measure the claim
    of a Redis outage; serving workers claim the woken ids by primary key."""

    burst = False


class LeaseQueuePollOnly(LeaseQueueServing):
    """Ours with workers that take no wakeups (Redis down, or ``redis_alias`` None): every
    claim goes through the claim index instead of by id."""

    name = "django-leasequeue (poll only)"
    worker_options = {"redis_alias": None}


def start_workers(system: System, burst: bool, logs: Path) -> list:
    """bench/peers.py's start, with the worker options of a variant of ours."""
    options = getattr(system, "worker_options", None)
    if options is None:
        return peers.start_workers(system, burst=burst, logs=logs)
    saved = os.environ.get("LEASEQUEUE_OPTIONS")
    os.environ["LEASEQUEUE_OPTIONS"] = json.dumps(options)
    try:
        return peers.start_workers(system, burst=burst, logs=logs)
    finally:
        if saved is None:
            del os.environ["LEASEQUEUE_OPTIONS"]
        else:
            os.environ["LEASEQUEUE_OPTIONS"] = saved


class Snapshot:
    """An idle REPEATABLE READ transaction that has read, kept open until closed."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        self.conn = psycopg.connect(dsn)
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        self.conn.execute("SELECT count(*) FROM pg_class")

    def close(self) -> None:
        self.conn.rollback()
        self.conn.close()


class TableWatch:
    """The queue table's dead tuples and index size, read on the benchmark's connection."""

    def __init__(self, system: System) -> None:
        self.sql = system.bench.sql
        self.table = system.tables[0]

    def read(self) -> tuple[int, float]:
        dead, index_bytes = self.sql.execute(
            "SELECT n_dead_tup, pg_indexes_size(relid) FROM pg_stat_user_tables "
            "WHERE relid = %s::regclass",
            [self.table],
        ).fetchone()
        return dead, index_bytes / 2**20


def drain(system: System, backlog: int, mode: str, args, logs: Path) -> DrainRun:
    peers.reset(system)
    enqueue_rate = peers.timed_enqueue(system, "write", backlog, bulk=True)
    system.analyze()
    watch = TableWatch(system)
    snapshot = Snapshot(system.bench.dsn) if mode == "snapshot" else None
    # Polling a count is itself a statement on the queue: rarer for bigger backlogs.
    poll = max(0.1, backlog / 200_000)
    marks = [backlog * k // TENTHS for k in range(1, TENTHS + 1)]
    reached: list[tuple[float, int, int, float]] = []  # (time, done, dead, index MiB)
    started = time.perf_counter()
    workers = start_workers(system, burst=system.burst, logs=logs)
    try:
        first = None
        while len(reached) < TENTHS:
            done, now = system.done(), time.perf_counter()
            if done and first is None:
                first = (now, done)
            while len(reached) < TENTHS and done >= marks[len(reached)]:
                reached.append((now, done, *watch.read()))
            if now - started > args.max_drain_seconds:
                break
            if all(w.poll() is not None for w in workers) and system.done() < backlog:
                break
            time.sleep(poll)
    finally:
        peers.stop_workers(workers, wait_for_exit=system.burst and len(reached) == TENTHS)
        if snapshot is not None:
            snapshot.close()
    tenths, previous = [], (first[0], first[1]) if first else (started, 0)
    for at, done, dead, index_mib in reached:
        rate = (done - previous[1]) / (at - previous[0]) if at > previous[0] else float("nan")
        tenths.append(Tenth(rate, dead, index_mib))
        previous = (at, done)
    overall = float("nan")
    if first and reached and reached[-1][0] > first[0]:
        overall = (reached[-1][1] - first[1]) / (reached[-1][0] - first[0])
    return DrainRun(
        system.name, backlog, mode, enqueue_rate, overall, len(reached) == TENTHS, tenths
    )


def steady(system: System, args, logs: Path) -> DrainRun:
    """Enqueue at a steady rate with the snapshot held; per tenth: done, pickup, bloat."""
    from bench.peer_apps.common import STAMPS_KEY, redis_client

    peers.reset(system)
    stamps = redis_client()
    stamps.delete(STAMPS_KEY)
    watch = TableWatch(system)
    workers = start_workers(system, burst=False, logs=logs)
    snapshot = Snapshot(system.bench.dsn)
    enqueued: dict[int, float] = {}
    started_at: dict[int, float] = {}
    stop = threading.Event()

    def collect() -> None:
        while not stop.is_set():
            popped = stamps.blpop([STAMPS_KEY], timeout=0.5)
            if popped:
                number, start = popped[1].decode().split()
                started_at[int(number)] = float(start)

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    per_tick = max(1, round(args.steady_rate / 10))
    tenth_seconds = args.steady_seconds / TENTHS
    tenths: list[Tenth] = []
    written, stamp_no = 0, 0
    try:
        begin = time.perf_counter()
        for k in range(TENTHS):
            tenth_end = begin + tenth_seconds * (k + 1)
            done_before, first_stamp = system.done(), stamp_no
            written_before, next_tick = written, time.perf_counter()
            while (now := time.perf_counter()) < tenth_end:
                if now >= next_tick:
                    system.enqueue_each("write", range(written, written + per_tick))
                    written += per_tick
                    enqueued[stamp_no] = system.enqueue_marked("stamp", stamp_no)
                    stamp_no += 1
                    # A late tick is not made up for: the rate drops rather than bursts.
                    next_tick = max(next_tick + 0.1, now)
                time.sleep(max(0.0, min(next_tick, tenth_end) - time.perf_counter()))
            done = system.done() - done_before
            pickups = [
                (started_at[n] - enqueued[n]) * 1000
                for n in range(first_stamp, stamp_no)
                if n in started_at
            ]
            quantiles = statistics.quantiles(pickups, n=100) if len(pickups) > 1 else None
            dead, index_mib = watch.read()
            tenths.append(
                Tenth(
                    done / tenth_seconds,
                    dead,
                    index_mib,
                    quantiles[49] if quantiles else None,
                    quantiles[98] if quantiles else None,
                    (written - written_before) / tenth_seconds,
                )
            )
            print(f"  {system.name} steady tenth {k + 1}: {describe(tenths[-1])}", flush=True)
    finally:
        stop.set()
        snapshot.close()
        peers.stop_workers(workers, wait_for_exit=False)
        collector.join(2)
    total = sum(t.jobs_per_s for t in tenths) / len(tenths) if tenths else float("nan")
    return DrainRun(
        system.name, written, "steady, snapshot held", args.steady_rate, total, True, tenths
    )


def describe(tenth: Tenth) -> str:
    pickup = (
        f", pickup p50 {tenth.pickup_p50_ms:.1f} ms p99 {tenth.pickup_p99_ms:.1f} ms"
        if tenth.pickup_p50_ms is not None
        else ""
    )
    enqueued = (
        f"enqueued {tenth.enqueued_per_s:,.0f}/s, " if tenth.enqueued_per_s is not None else ""
    )
    return (
        f"{enqueued}{tenth.jobs_per_s:,.0f} jobs/s, {tenth.dead_tuples:,} dead tuples, "
        f"indexes {tenth.index_mib:,.1f} MiB{pickup}"
    )


def print_drain(run: DrainRun) -> None:
    rates = " ".join(f"{t.jobs_per_s:,.0f}" for t in run.tenths)
    status = "" if run.finished else f" (stopped after {len(run.tenths)} tenths)"
    last = run.tenths[-1] if run.tenths else Tenth(float("nan"), 0, 0.0)
    print(
        f"{run.system:>30} {run.backlog:>8,} {run.mode:>8}: {run.jobs_per_s:,.0f} jobs/s"
        f"{status}; tenths {rates}; at the end {last.dead_tuples:,} dead tuples, "
        f"indexes {last.index_mib:,.1f} MiB",
        flush=True,
    )


def summary(runs: list[DrainRun]) -> dict[str, float]:
    """The issue's targets, as ratios of the runs above (NaN where a run is missing)."""

    def rate(system: str, backlog: int, mode: str) -> float:
        for run in runs:
            if (run.system, run.backlog, run.mode) == (system, backlog, mode):
                return run.jobs_per_s
        return float("nan")

    ours, pgq = "django-leasequeue", "PgQueuer"
    sizes = sorted({run.backlog for run in runs if run.mode in ("quiet", "snapshot")})
    figures = {}
    if sizes:
        small, big = sizes[0], sizes[-1]
        figures[f"ours {big} / ours {small}, quiet"] = rate(ours, big, "quiet") / rate(
            ours, small, "quiet"
        )
    for size in sizes:
        figures[f"ours snapshot / quiet at {size}"] = rate(ours, size, "snapshot") / rate(
            ours, size, "quiet"
        )
        for mode in ("quiet", "snapshot"):
            figures[f"ours / PgQueuer at {size}, {mode}"] = rate(ours, size, mode) / rate(
                pgq, size, mode
            )
    return figures


def server_settings(bench: Bench) -> dict:
    """Versions and the settings that move these figures, for the results file."""
    show = [
        "server_version",
        "autovacuum_vacuum_scale_factor",
        "autovacuum_naptime",
        "synchronous_commit",
    ]
    return {name: bench.sql.execute(f"SHOW {name}").fetchone()[0] for name in show} | {
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="5000,50000,500000")
    parser.add_argument("--modes", default="quiet,snapshot")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--pgqueuer-batch-size", type=int, default=5)
    parser.add_argument("--max-drain-seconds", type=float, default=600)
    parser.add_argument(
        "--steady-seconds", type=float, default=600, help="0 leaves the steady run out"
    )
    parser.add_argument("--steady-rate", type=float, default=400, help="write jobs a second")
    parser.add_argument("--systems", default="django-leasequeue,PgQueuer")
    parser.add_argument(
        "--poll-only",
        action="store_true",
        help="also run ours with workers that take no wakeups (every claim by the claim index)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    dsn, sql = peers.setup_database()
    bench = Bench(
        args.processes,
        args.concurrency,
        sql,
        dsn,
        os.environ["LQPEERS_REDIS_URL"],
        args.pgqueuer_batch_size,
    )
    ours = [LeaseQueueServing, *([LeaseQueuePollOnly] if args.poll_only else [])]
    peer_systems.SYSTEMS = (
        *ours,
        *(s for s in peer_systems.SYSTEMS if s is not peer_systems.LeaseQueue),
    )
    if args.poll_only:
        args.systems += f",{LeaseQueuePollOnly.name}"
    systems, skipped = peers.choose_systems(bench, args.systems)
    logs = Path(tempfile.mkdtemp(prefix="lqbacklog-logs-"))
    print(f"processes={args.processes} concurrency={args.concurrency}; logs in {logs}", flush=True)
    runs: list[DrainRun] = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        for mode in args.modes.split(","):
            for system in systems:
                run = drain(system, size, mode, args, logs)
                runs.append(run)
                print_drain(run)
    if args.steady_seconds:
        for system in systems:
            run = steady(system, args, logs)
            runs.append(run)
            print_drain(run)
    figures = summary(runs)
    print("\nratios:")
    for name, value in figures.items():
        print(f"  {name}: {value:.2f}")
    report = {
        "settings": {**vars(args), "output": str(args.output), **server_settings(bench)},
        "skipped": skipped,
        "runs": [asdict(run) for run in runs],
        "ratios": figures,
    }
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nwrote {args.output}")


if __name__ == "__main__":
    main()
