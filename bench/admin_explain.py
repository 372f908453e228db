"""Load admin pages against a seeded scratch database and EXPLAIN ANALYZE every job query.

    createdb -h 127.0.0.1 -U postgres lq_explain
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lq_explain \\
        python -m django migrate --settings tests.support.settings --pythonpath .
    psql -h 127.0.0.1 -U postgres -f bench/admin_explain_seed.sql lq_explain
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lq_explain python bench/admin_explain.py

Prints, per page, the wall time of the request and each job-table query's execution time and
access paths (``-v``: the whole plans). A count the paginator cancelled shows its full cost here.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.settings")

import django

django.setup()

from django.test.utils import setup_test_environment  # noqa: E402

setup_test_environment()  # response.context, as in tests

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

VERBOSE = "-v" in sys.argv

PAGES = [
    "",
    "?p=200",
    "?status__exact=failed",
    "?status__exact=queued",
    "?status__exact=succeeded",
    "?queue=billing",
    "?queue=billing&status__exact=failed",
    "?task=app.tasks.task_7",
    "?lease=expired",
    "?failed_within=1h",
    "?q={job_id}",
    "?q=key-500000",
    "?q=host-1:1001",
    "?q=task_7",
]


def main() -> None:
    user, _ = get_user_model().objects.get_or_create(
        username="explain", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM leasequeue_job ORDER BY id LIMIT 1 OFFSET 500000")
        job_id = cursor.fetchone()[0]
    client.get("/admin/leasequeue/job/")  # warm up caches and imports
    for page in PAGES:
        url = "/admin/leasequeue/job/" + page.format(job_id=job_id)
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (url, response.status_code)
        count = response.context["cl"].result_count
        estimated = response.context["cl"].paginator.estimated
        print(
            f"\n### `{page or '(no filter)'}` — {elapsed:.0f} ms, "
            f"{'about ' if estimated else ''}{count} rows"
        )
        for query in queries.captured_queries:
            sql = query["sql"]
            if "leasequeue_job" not in sql or sql.startswith("EXPLAIN"):
                continue
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql)
                plan = [row[0] for row in cursor.fetchall()]
            scans = sorted(
                {
                    line.strip().removeprefix("->  ").split(" (")[0]
                    for line in plan
                    if "Scan" in line and "CTE" not in line and "WorkTable" not in line
                }
            )
            print(
                f"- `{sql[:60].replace(chr(10), ' ')}…`: {plan[-1].split(': ')[1]}; "
                + "; ".join(scans)
            )
            if VERBOSE:
                print("\n```\n" + "\n".join(plan) + "\n```")


if __name__ == "__main__":
    main()
