"""Tasks held to flow-control limits; each records its own start and end (the database's clock,
through its own connection) in the ``flow_run`` table, so tests measure what ran at once."""

import os
import threading
import time

import psycopg

from django_leasequeue import task

_local = threading.local()


def _connection() -> psycopg.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(os.environ["LEASEQUEUE_RUNS_DSN"], autocommit=True)
    return conn


def record_run(label: str, key: str, seconds: float) -> None:
    """One row per run: started when the function starts, ended when it returns."""
    conn = _connection()
    [run_id] = conn.execute(
        "INSERT INTO flow_run (label, key, pid) VALUES (%s, %s, %s) RETURNING id",
        [label, key, os.getpid()],
    ).fetchone()
    time.sleep(seconds)
    conn.execute("UPDATE flow_run SET ended = clock_timestamp() WHERE id = %s", [run_id])


@task(concurrency=2, max_attempts=5, backoff_seconds=0.05)
def capped(n, seconds):
    record_run(f"capped-{n}", "all", seconds)


@task(concurrency=1, concurrency_key=lambda user_id, n, seconds: f"user:{user_id}")
def per_user(user_id, n, seconds):
    record_run(f"per-user-{n}", f"user:{user_id}", seconds)


@task(concurrency=1, max_attempts=5, backoff_seconds=0.05)
def single_slot(n, seconds):
    record_run(f"single-{n}", "all", seconds)


@task(
    queue_name="llm",
    concurrency=1,
    concurrency_key=lambda user_id, n, seconds: f"user:{user_id}",
    max_attempts=5,
    backoff_seconds=0.05,
)
def llm_call(user_id, n, seconds):
    """One call per user at a time, two at most across users (the llm queue's cap)."""
    record_run(f"llm-{n}", f"user:{user_id}", seconds)


@task(rate_limit="10/s")
def rated(n):
    record_run(f"rated-{n}", "all", 0)


@task
def unlimited(n):
    record_run(f"unlimited-{n}", "all", 0)


@task(priority=100)
def urgent(n, seconds):
    record_run(f"urgent-{n}", "urgent", seconds)


@task(priority=0)
def humble(n):
    record_run(f"humble-{n}", "humble", 0)


@task(max_pending=50)
def bounded(n):
    return n


@task(max_pending=2, max_pending_key=lambda user_id, n: f"user:{user_id}")
def bounded_per_user(user_id, n):
    return n


@task(max_pending=3, unique_key=lambda n: f"bounded-unique:{n}")
def bounded_unique(n):
    return n


@task(rate_limit="1/h")
def hourly(n):
    return n
