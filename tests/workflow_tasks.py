"""Tasks of the workflow tests: each records when it started and finished, through its own
connection, so that tests can compare the times the tasks themselves saw."""

import os
import time

import psycopg

from django_leasequeue import task


def _record(name: str, started: float) -> None:
    dsn = os.environ.get("LEASEQUEUE_WORKFLOW_RECORD_DSN")
    if dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO workflow_test_runs (step, started, finished) VALUES (%s, %s, %s)",
                [name, started, time.time()],
            )


@task(max_attempts=3, backoff_seconds=0.05)
def fetch(url, seconds=0.0):
    started = time.time()
    time.sleep(seconds)
    _record(f"fetch:{url}", started)
    return f"page of {url}"


@task(max_attempts=3, backoff_seconds=0.05)
def length(text):
    return len(text)


@task(max_attempts=3, backoff_seconds=0.05)
def total(numbers):
    return sum(numbers)


@task(max_attempts=3, backoff_seconds=0.05)
def add_one(number):
    return number + 1


@task(max_attempts=1)
def explode(message="boom"):
    raise RuntimeError(message)


@task(takes_context=True)
def report(context):
    return {"upstream": context.upstream_results}


@task
def noop():
    return None


@task
def collect(results):
    return results
