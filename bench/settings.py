"""Benchmark settings: the test settings on their own database (BENCH_DATABASE_URL)."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lq_bench")

from tests.support.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]  # noqa: F405
if os.environ.get("LEASEQUEUE_BENCH_SCHEDULES"):  # throughput.py --schedule-cost
    INSTALLED_APPS.append("bench.schedules")
TASKS["default"]["OPTIONS"]["key_prefix"] = "lqbench"  # noqa: F405
