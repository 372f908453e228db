"""The flow claim on a big backlog: 10,000 queued jobs of a ``concurrency=2`` task (two of them
running), beside 500 running jobs of an unlimited task; each statement of one claim EXPLAIN
ANALYZEd (twice: the second run shows the planning time of a warm connection).

    python bench/flow_explain.py

Prints each statement's execution time and plan. Uses its own database (lq_bench).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

from bench.harness import reset, setup_database

BACKLOG = 10_000
RUNNING_ELSEWHERE = 500


def main() -> None:
    setup_database()
    reset()
    from django.db import connection

    from django_leasequeue.sql import flow as flow_sql
    from django_leasequeue.sql import jobs as jobs_sql
    from django_leasequeue.sql.executor import execute
    from tests.support.helpers import claim_limited
    from tests.support.tasks import flow as flow_tasks

    backend = flow_tasks.capped.get_backend()
    backend.enqueue_many([(flow_tasks.capped, (n, 0), {}) for n in range(BACKLOG)])
    claim_limited(free=10)  # the cap's two slots taken
    backend.enqueue_many([(flow_tasks.unlimited, (n,), {}) for n in range(RUNNING_ELSEWHERE)])
    execute(jobs_sql.claim_batch(None, RUNNING_ELSEWHERE, worker_id="elsewhere", lease_seconds=600))
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE leasequeue_job")
    candidates = flow_sql.flow_candidates(None, after="", partitions=20, per_partition=10)
    key = "task:tests.support.tasks.flow.capped"
    usage = flow_sql.flow_usage(concurrency_keys=[key], queues=[], rate_keys=[])
    for statement in (candidates, usage):
        for _ in range(2):
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                explain = f"EXPLAIN (ANALYZE, COSTS OFF) {statement.query.sql}"
                cursor.execute(explain, statement.params)
                plan = [row[0] for row in cursor.fetchall()]
                cursor.execute("ROLLBACK")
        print(f"-- {statement.query.name}: {BACKLOG:,} queued, 2 running (+500 running elsewhere)")
        print("\n".join(plan), end="\n\n")


if __name__ == "__main__":
    main()
