from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from django_leasequeue.runtime.connection import connection_params
from tests.plans.bench import PlanBench
from tests.plans.table import SCHEMA, Sample, build


@dataclass(frozen=True)
class PlansDatabase:
    params: dict[str, Any]
    sample: Sample


@pytest.fixture(scope="package")
def plans_db(django_db_setup) -> Iterator[PlansDatabase]:
    """The test database, the job tables' copies built there once (``table.py``); dropped
    afterwards (other tests read the database's catalogue: its triggers, its functions)."""
    params = connection_params("default")
    with psycopg.connect(**params, autocommit=True) as conn:
        try:
            yield PlansDatabase(params, build(conn))
        finally:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


@pytest.fixture
def bench(plans_db) -> Iterator[PlanBench]:
    """A new session on the copies (a plan cache of its own), in a transaction rolled back."""
    bench = PlanBench(plans_db.params, plans_db.sample)
    try:
        with bench.rolled_back():
            yield bench
    finally:
        bench.close()
