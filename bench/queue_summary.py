"""The admin's queue summary on a big backlog: the statement before and after issue #15.

Loads ``bench/queue_summary_seed.sql`` (1,000,000 queued jobs in three queues, plus running,
retrying, failed and 200,000 succeeded ones) into its own database, then times both versions
of ``queue_summary``, right after the load (visibility map not set yet) and after
``VACUUM ANALYZE``, prints each one's median, fastest and slowest of N runs, the
``EXPLAIN (ANALYZE, BUFFERS)`` of the new one, and how far its estimates are from the truth.

    createdb -h 127.0.0.1 -U postgres lq_ops_bench
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lq_ops_bench \\
        python -m django migrate --settings bench.settings --pythonpath .
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lq_ops_bench \\
        python bench/queue_summary.py [--runs 9] [--no-seed] [-v]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lq_ops_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from bench.admin_timing import explain, print_server_and_load  # noqa: E402
from django_leasequeue.sql import reads as reads_sql  # noqa: E402

SEED = ROOT / "bench" / "queue_summary_seed.sql"

# queue_summary as it was before issue #15: exact counts over every unfinished row.
BEFORE = """
WITH counts AS (
    SELECT queue_name,
           count(*) FILTER (WHERE status = 'queued') AS queued,
           count(*) FILTER (WHERE status = 'running') AS running,
           count(*) FILTER (WHERE status = 'retrying') AS retrying,
           count(*) FILTER (WHERE status = 'failed') AS failed
    FROM leasequeue_job
    WHERE status IN ('queued', 'running', 'retrying', 'failed')
    GROUP BY queue_name
), due AS (
    SELECT queue_name, min(run_after) AS oldest_due
    FROM leasequeue_job
    WHERE status IN ('queued', 'retrying') AND run_after <= now()
    GROUP BY queue_name
), finished AS (
    SELECT queue_name, count(*) AS finished_last_minute
    FROM leasequeue_job
    WHERE status IN ('succeeded', 'failed', 'cancelled')
      AND finished_at >= now() - interval '1 minute'
    GROUP BY queue_name
)
SELECT queue_name,
       coalesce(counts.queued, 0) AS queued,
       coalesce(counts.running, 0) AS running,
       coalesce(counts.retrying, 0) AS retrying,
       coalesce(counts.failed, 0) AS failed,
       now() - due.oldest_due AS oldest_due_age,
       coalesce(finished.finished_last_minute, 0) AS finished_last_minute
FROM counts
FULL JOIN due USING (queue_name)
FULL JOIN finished USING (queue_name)
ORDER BY queue_name;
"""


def timed(sql: str, params: dict, runs: int) -> list[float]:
    """Milliseconds per run, client side (the round trip included)."""
    times = []
    with connection.cursor() as cursor:
        for _ in range(runs):
            began = time.perf_counter()
            cursor.execute(sql, params)
            cursor.fetchall()
            times.append((time.perf_counter() - began) * 1000)
    return times


def report(label: str, times: list[float]) -> None:
    print(
        f"  {label:<7} median {statistics.median(times):7.1f} ms   "
        f"fastest {min(times):7.1f} ms   slowest {max(times):7.1f} ms"
    )


def truth() -> dict[tuple[str, str], int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT queue_name, status, count(*) FROM leasequeue_job "
            "WHERE status IN ('queued', 'running', 'retrying', 'failed') GROUP BY 1, 2"
        )
        return {(queue, status): count for queue, status, count in cursor.fetchall()}


def measure(stage: str, runs: int, verbose: bool) -> None:
    after = reads_sql.queue_summary()
    print(f"\n{stage}")
    report("before", timed(BEFORE, {}, runs))
    report("after", timed(after.query.sql, after.params, runs))
    with connection.cursor() as cursor:
        cursor.execute(after.query.sql, after.params)
        names = [column.name for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    exact = truth()
    for row in rows:
        for status in ("queued", "running", "retrying", "failed"):
            true = exact.get((row["queue_name"], status), 0)
            shown = row[status]
            mark = "~" if status in row["estimated"] else "="
            error = f" ({(shown - true) / true:+.1%})" if mark == "~" and true else ""
            print(
                f"    {row['queue_name']:<8} {status:<8} {mark} {shown:>9,}  true {true:>9,}{error}"
            )
    if verbose:
        print(explain(BEFORE, {}))
    print(explain(after.query.sql, after.params))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-seed", action="store_true", help="Keep the loaded table.")
    parser.add_argument("-v", action="store_true", help="Also the old statement's plan.")
    args = parser.parse_args()
    print_server_and_load()
    if not args.no_seed:
        began = time.monotonic()
        with connection.cursor() as cursor:
            cursor.execute(SEED.read_text())
        print(f"Loaded the backlog in {time.monotonic() - began:.0f} s.")
        measure("Right after the load (no VACUUM yet: heap fetches)", args.runs, args.v)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE leasequeue_job")
    measure("After VACUUM ANALYZE", args.runs, args.v)


if __name__ == "__main__":
    main()
