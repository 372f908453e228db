"""The failures page and the search by argument (issue 38) on a week of 1,000,000 jobs, beside
today's job list page; and the enqueue rate with and without the failures page's index.

1. Enqueue, before/after: ``enqueue_many`` of ``--jobs`` jobs into an empty table, alternately
   without the ``leasequeue_job_failures`` index (dropped) and with it (created again), median of
   ``--repeats`` runs each. The index is partial (failed jobs only): an enqueue writes no entry.
2. Loads ``bench/failures_search_seed.sql`` (1,000,000 jobs enqueued over 7 days: 95% succeeded,
   4% failed with three errors each, tracebacks and all; 20 tasks, 6 exception classes), then
   ``VACUUM ANALYZE``.
3. Times, through Django's test client as a superuser (the whole answer: queries, template,
   middleware), the median, fastest and slowest of ``--runs`` loads of: the job list as it is
   today (the peer), the failures page and its JSON for the windows 1h, 24h and 7d, and the job
   list searching ``user_id=42`` over 24h, 7d and 30d; for each, the time its job-table queries
   took. Then the plans of the failures statement (7d) and of the search's walk of its window
   (7d: the matching ids; the page and its count then read them by primary key).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lq_failures_bench \\
        python bench/failures_search.py [--runs 9] [--jobs 20000] [--repeats 5] [--no-seed]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lq_failures_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from bench.harness import bulk_enqueue, checkpoint, reset, setup_database  # noqa: E402

setup_database()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench.admin_timing import explain, print_server_and_load, timed_loads  # noqa: E402
from bench.tasks import anoop  # noqa: E402
from django_leasequeue.admin import argument_search  # noqa: E402
from django_leasequeue.models import Job  # noqa: E402
from django_leasequeue.sql import failures as failures_sql  # noqa: E402

setup_test_environment()  # response.context, as in tests

SEED = ROOT / "bench" / "failures_search_seed.sql"
LIST = "/admin/leasequeue/job/"
FAILURES = "/admin/leasequeue/job/failures/"
INDEX = "leasequeue_job_failures"


def index_definition() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [INDEX])
        return cursor.fetchone()[0]


def measure_enqueue(jobs: int, repeats: int) -> None:
    """Alternating runs without and with the index, on an emptied table each time."""
    definition = index_definition()
    rates: dict[str, list[float]] = {"without the index": [], "with the index": []}
    try:
        for _ in range(repeats):
            for label in rates:
                with connection.cursor() as cursor:
                    cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")
                    if label == "with the index":
                        cursor.execute(definition)
                reset()
                checkpoint()
                rates[label].append(bulk_enqueue(jobs, anoop))
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")
            cursor.execute(definition)
    print(f"\nBulk enqueue (enqueue_many of {jobs:,} jobs, median of {repeats} runs):")
    for label, values in rates.items():
        print(
            f"  {label:<18} {statistics.median(values):9,.0f} jobs/s   runs: "
            + " ".join(f"{value:,.0f}" for value in values)
        )
    before, after = (statistics.median(values) for values in rates.values())
    print(f"  with / without: {after / before:.1%}")


def report(label: str, url: str, client: Client, runs: int) -> None:
    loads = timed_loads(client, url, runs, job_queries=True)
    totals = loads.totals
    print(
        f"  {label:<34} median {statistics.median(totals):6.1f} ms  "
        f"(fastest {min(totals):6.1f}, slowest {max(totals):6.1f});  "
        f"job-table queries {statistics.median(loads.job_queries):6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per enqueue run")
    parser.add_argument("--repeats", type=int, default=5, help="enqueue runs of each kind")
    parser.add_argument("--no-seed", action="store_true", help="Keep the loaded table.")
    args = parser.parse_args()
    print_server_and_load()
    if not args.no_seed:
        measure_enqueue(args.jobs, args.repeats)
        began = time.monotonic()
        with connection.cursor() as cursor:
            cursor.execute(SEED.read_text())
            cursor.execute("VACUUM ANALYZE leasequeue_job")
        print(f"\nLoaded 1,000,000 jobs over 7 days in {time.monotonic() - began:.0f} s.")

    user, _ = get_user_model().objects.get_or_create(
        username="bench-operator", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    print(f"\nPages ({args.runs} loads each; whole answer, and its job-table queries):")
    report("job list (today's page, the peer)", LIST, client, args.runs)
    for window in ("1h", "24h", "7d"):
        report(f"failures {window}", f"{FAILURES}?window={window}", client, args.runs)
        report(
            f"failures {window} JSON", f"{FAILURES}?window={window}&format=json", client, args.runs
        )
    for window in ("24h", "7d", "30d"):
        report(
            f"job list, user_id=42 over {window}",
            f"{LIST}?q=user_id%3D42&q_window={window}",
            client,
            args.runs,
        )
    report(
        "job list, user_id=42 email=… 7d",
        f"{LIST}?q=user_id%3D42+email%3Duser42%40example.com&q_window=7d",
        client,
        args.runs,
    )

    statement = failures_sql.failure_groups(window_seconds=7 * 86400, limit=200)
    print("\nThe failures statement, 7d:")
    print(explain(statement.query.sql, statement.params, indent="    "))
    request = client.get(f"{LIST}?q=user_id%3D42&q_window=7d").wsgi_request
    window = argument_search.argument_search(request)
    [term] = argument_search.parse("user_id=42")
    walk = (
        Job.objects.filter(pk__gte=window.since_id)
        .filter(term.condition())
        .order_by("-pk")
        .values_list("pk", flat=True)[: argument_search.MAX_MATCHES + 1]
    )
    print("\nThe search's one walk of its window (the matching ids), user_id=42 over 7d:")
    print(walk.explain(analyze=True, buffers=True))


if __name__ == "__main__":
    main()
