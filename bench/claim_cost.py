"""``throughput.py --claim-cost``: what queue control (#23) costs the claims and the enqueue, each
beside its baseline, in one run.

- claims, before and after: the claim statements of the commit where the working tree left
  main (``git merge-base HEAD main``) and of the working tree, run alternately on the same table of
  due jobs, each in a transaction rolled back (so every run sees the same rows);
- a paused queue's backlog: 200,000 jobs of a paused queue ahead of the live ones, claimed by
  one walk of the claim order (``claim_batch``) and by each open queue's head
  (``claim_batch_by_queue``, what workers use while a queue is paused);
- expired jobs: the poll claims and the oldest-first read with 1,000,000 expired jobs ahead of
  the live ones, then how long the sweep takes to fail them all;
- the enqueue: ``enqueue_many`` and single enqueues with and without the index the per-queue
  claim reads (``leasequeue_job_queue_claim``), alternately.
"""

import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERY_FILES = ("jobs.sql", "flow.sql")
# Rounds of each timing (each round runs the baseline and the current statement once).
ROUNDS = 400
PAUSED_BACKLOG = 200_000
EXPIRED_BACKLOG = 1_000_000
LIVE_JOBS = 1_000


def baseline_revision() -> str:
    """The commit this branch started from (where it left main)."""
    return _git("merge-base", "HEAD", "main").strip()


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def baseline_queries(revision: str) -> dict:
    from django_leasequeue.sql import load_files

    return load_files(
        {name: _git("show", f"{revision}:django_leasequeue/sql/{name}") for name in QUERY_FILES}
    )


def _timed(cursor, sql: str, params: dict) -> float:
    """Seconds of one statement in a transaction that is rolled back."""
    cursor.execute("BEGIN")
    started = time.perf_counter()
    cursor.execute(sql, params)
    if cursor.description:
        cursor.fetchall()
    elapsed = time.perf_counter() - started
    cursor.execute("ROLLBACK")
    return elapsed


def median_us(cursor, sql: str, params: dict, rounds: int = 20) -> float:
    return statistics.median(_timed(cursor, sql, params) for _ in range(rounds)) * 1e6


def compare(cursor, before: str, after: str, params: Callable[[], dict], rounds: int = ROUNDS):
    """Median µs of ``before`` and ``after`` run alternately (a noisy moment hits both)."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    for round_ in range(rounds):
        order = ("before", "after") if round_ % 2 == 0 else ("after", "before")
        for which in order:
            sql = before if which == "before" else after
            times[which].append(_timed(cursor, sql, params()))
    return statistics.median(times["before"]) * 1e6, statistics.median(times["after"]) * 1e6


def seed_due(
    cursor, jobs: int, queue: str = "default", *, ago: str = "1 minute", expired: bool = False
) -> None:
    """Due jobs, in bulk SQL; ``expired``: each one's expiry a second after its run_after."""
    cursor.execute(
        """
        INSERT INTO leasequeue_job (id, task_path, queue_name, args, kwargs, run_after,
                                    expires_at)
        SELECT gen_random_uuid(), 'bench.tasks.anoop', %s, jsonb_build_array(n), '{}',
               due, CASE WHEN %s THEN due + interval '1 second' END
        FROM generate_series(1, %s) AS n,
             LATERAL (SELECT now() - %s::interval + n * interval '1 microsecond' AS due) AS t
        """,
        [queue, expired, jobs, ago],
    )


def seed_limited(cursor, jobs: int) -> None:
    cursor.execute(
        """
        INSERT INTO leasequeue_job (id, task_path, queue_name, args, kwargs, run_after, flow_key,
                                    concurrency_key, limits)
        SELECT gen_random_uuid(), 'bench.tasks.anoop', 'default', '[]', '{}', now(),
               'task:bench' || (n %% 20), 'task:bench' || (n %% 20),
               jsonb_build_array(jsonb_build_object('key', 'task:bench' || (n %% 20),
                                                    'kind', 'concurrency', 'limit', 2))
        FROM generate_series(1, %s) AS n
        """,
        [jobs],
    )


def reset(cursor) -> None:
    cursor.execute("TRUNCATE leasequeue_job, leasequeue_paused_queue CASCADE")


def analyze(cursor) -> None:
    cursor.execute("VACUUM ANALYZE leasequeue_job")


def run(jobs: int) -> dict:
    from django.db import connection

    from django_leasequeue.sql import QUERIES
    from django_leasequeue.sql import queue_control as queue_control_sql
    from django_leasequeue.sql.executor import execute

    revision = baseline_revision()
    old = baseline_queries(revision)
    figures: dict = {"baseline": revision[:10]}
    print(
        f"baseline: {revision[:10]} (where the working tree left main); current: the working tree"
    )
    with connection.cursor() as cursor:
        reset(cursor)
        seed_due(cursor, jobs)
        seed_limited(cursor, 2000)
        analyze(cursor)
        cursor.execute(
            "SELECT array_agg(id) FROM (SELECT id FROM leasequeue_job WHERE flow_key IS NULL"
            " ORDER BY random() LIMIT 5000) AS sample"
        )
        [[pool]] = cursor.fetchall()
        pick = iter(range(10**9))

        def ten_ids() -> dict:
            start = next(pick) * 10 % (len(pool) - 10)
            return {
                "ids": pool[start : start + 10],
                "worker_id": "w",
                "lease_seconds": 30.0,
                "flow_claim": False,
                "limited": False,  # its name in baselines before the rename to flow_claim
            }

        claim = {"worker_id": "w", "lease_seconds": 30.0, "limit": 10}
        cases = {
            "claim_by_ids (10 ids)": ("claim_by_ids", ten_ids),
            "claim_batch (10, every queue)": ("claim_batch", lambda: {**claim, "queues": None}),
            "claim_batch (10, queue default)": (
                "claim_batch",
                lambda: {**claim, "queues": ["default"]},
            ),
            "oldest_due_job": ("oldest_due_job", lambda: {"queues": None}),
            "flow_candidates (20 partitions)": (
                "flow_candidates",
                lambda: {"queues": None, "after": "", "partitions": 20, "per_partition": 10},
            ),
        }
        print(f"claims on {jobs:,} due jobs (+2,000 limited), median of {ROUNDS} each:")
        for label, (name, params) in cases.items():
            before, after = compare(cursor, old[name].sql, QUERIES[name].sql, params)
            figures[label] = {"before_us": before, "after_us": after, "ratio": after / before}
            print(f"  {label}: {before:.0f} µs -> {after:.0f} µs (x{after / before:.2f})")

        # A paused queue's backlog ahead of the live jobs.
        reset(cursor)
        seed_due(cursor, PAUSED_BACKLOG, "other", ago="2 hours")
        seed_due(cursor, LIVE_JOBS)
        cursor.execute("INSERT INTO leasequeue_paused_queue (queue_name) VALUES ('other')")
        analyze(cursor)
        open_queues = execute(queue_control_sql.open_queues(None)).open
        walk = median_us(cursor, QUERIES["claim_batch"].sql, {**claim, "queues": None})
        heads = median_us(
            cursor, QUERIES["claim_batch_by_queue"].sql, {**claim, "queues": open_queues}
        )
        figures["paused backlog"] = {"walk_us": walk, "heads_us": heads}
        print(
            f"{PAUSED_BACKLOG:,} jobs of a paused queue ahead of {LIVE_JOBS:,} live ones: "
            f"one walk of the claim order {walk:,.0f} µs; each open queue's head "
            f"{heads:,.0f} µs (x{walk / heads:,.0f})"
        )

        # Expired jobs ahead of the live ones: before the sweep, the sweep, after it.
        reset(cursor)
        seed_due(cursor, EXPIRED_BACKLOG, ago="2 hours", expired=True)
        seed_due(cursor, LIVE_JOBS)
        analyze(cursor)
        # What workers run while jobs with an expiry wait (the sweep says so): the two-head poll
        # claim and oldest-first read, and the per-queue head while a queue is paused.
        reads = {
            "claim_batch_with_expiring": {**claim, "queues": None},
            "oldest_due_job": {"queues": None},
            "claim_batch_by_queue": {**claim, "queues": ["default"]},
        }
        walks = {name: median_us(cursor, QUERIES[name].sql, p) for name, p in reads.items()}

        def poll_us() -> float:
            name = "claim_batch_with_expiring"
            return median_us(cursor, QUERIES[name].sql, reads[name])

        started, swept = time.perf_counter(), 0
        while batch := execute(queue_control_sql.expire_jobs(limit=500)):
            swept += len(batch)
        sweep_seconds = time.perf_counter() - started
        after_sweep = poll_us()
        analyze(cursor)
        after_vacuum = poll_us()
        figures["expired backlog"] = {
            **{f"{name}_before_sweep_us": us for name, us in walks.items()},
            "sweep_seconds": sweep_seconds,
            "after_sweep_us": after_sweep,
            "after_vacuum_us": after_vacuum,
        }
        print(
            f"{EXPIRED_BACKLOG:,} expired jobs ahead of {LIVE_JOBS:,} live ones, before the sweep:"
        )
        for name, us in walks.items():
            print(f"  {name}: {us:,.0f} µs")
        print(
            f"the sweep failed {swept:,} in {sweep_seconds:.1f} s (batches of 500); then a poll "
            f"claim {after_sweep:,.0f} µs, {after_vacuum:,.0f} µs after VACUUM"
        )
        reset(cursor)
    figures["enqueue"] = enqueue_cost(jobs)
    return figures


def enqueue_cost(jobs: int, repeats: int = 5) -> dict:
    """enqueue_many (COPY) and single enqueues, with and without leasequeue_job_queue_claim."""
    from django.db import connection

    from bench.tasks import anoop

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_indexdef('leasequeue_job_queue_claim'::regclass)")
        [[definition]] = cursor.fetchall()
    rates: dict[str, dict[bool, list[float]]] = {
        "many": {True: [], False: []},
        "one": {True: [], False: []},
    }
    for round_ in range(repeats):
        for with_index in (True, False) if round_ % 2 == 0 else (False, True):
            with connection.cursor() as cursor:
                reset(cursor)
                cursor.execute("DROP INDEX IF EXISTS leasequeue_job_queue_claim")
                if with_index:
                    cursor.execute(definition)
            backend = anoop.get_backend()
            started = time.perf_counter()
            backend.enqueue_many([(anoop, (n,), {}) for n in range(jobs)])
            rates["many"][with_index].append(jobs / (time.perf_counter() - started))
            singles = 2000
            started = time.perf_counter()
            for n in range(singles):
                anoop.enqueue(n)
            rates["one"][with_index].append(singles / (time.perf_counter() - started))
    with connection.cursor() as cursor:
        reset(cursor)
        cursor.execute("DROP INDEX IF EXISTS leasequeue_job_queue_claim")
        cursor.execute(definition)
    figures = {}
    for kind, label in (("many", f"enqueue_many of {jobs:,}"), ("one", "single enqueues")):
        without = statistics.median(rates[kind][False])
        with_ = statistics.median(rates[kind][True])
        figures[kind] = {"without_index": without, "with_index": with_}
        print(
            f"{label}: {without:,.0f} jobs/s without the per-queue claim index, {with_:,.0f} "
            f"with it (x{with_ / without:.2f}, medians of {repeats})"
        )
    return figures
