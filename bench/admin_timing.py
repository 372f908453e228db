"""What the benchmarks of the admin's reads share (bench/queue_summary.py,
bench/failures_search.py, bench/dashboard.py): the lines on the server and the machine's load
they start with, a page's loads timed through Django's test client, a statement's plan.
Imported after ``django.setup()``."""

import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext


def print_server_and_load() -> None:
    """PostgreSQL's version, then the load average and the number of cores."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        print(cursor.fetchone()[0])
    print(
        "Load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f} on {} cores".format(
            *os.getloadavg(), os.cpu_count()
        )
    )


def explain(sql: str, params: dict | None = None, indent: str = "") -> str:
    """The statement's ``EXPLAIN (ANALYZE, BUFFERS)``, each line of the plan after ``indent``."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        return "\n".join(indent + row[0] for row in cursor.fetchall())


@dataclass
class PageLoads:
    """Milliseconds per load (the whole answer: queries, template, middleware) and, when
    captured, of each load's job-table queries."""

    totals: list[float] = field(default_factory=list)
    job_queries: list[float] = field(default_factory=list)


def timed_loads(client: Client, url: str, runs: int, *, job_queries: bool = False) -> PageLoads:
    """``runs`` loads of ``url``, after one that warms up (imports, templates, the plan cache,
    the buffers), each answered 200. With ``job_queries``, each load's queries are captured
    (Django's debug cursor, inside the timing) for the time of those on the job table."""
    client.get(url)
    loads = PageLoads()
    for _ in range(runs):
        with CaptureQueriesContext(connection) if job_queries else nullcontext() as captured:
            began = time.perf_counter()
            response = client.get(url)
            loads.totals.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, (url, response.status_code)
        if captured is not None:
            loads.job_queries.append(
                sum(
                    float(query["time"]) * 1000
                    for query in captured.captured_queries
                    if "leasequeue_job" in query["sql"]
                )
            )
    return loads
