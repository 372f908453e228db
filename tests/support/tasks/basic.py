"""Tasks the test suite enqueues."""

import asyncio
import os
import time

import psycopg

from django_leasequeue import task
from django_leasequeue.tasks_framework import task as django_task
from tests.support.models import Execution, Receipt


@django_task
def add(a, b):
    return a + b


@task(max_attempts=2, backoff_seconds=0.5)
def flaky(x):
    raise ValueError(f"flaky {x}")


@task(unique_key=lambda user_id: f"report:{user_id}")
def report(user_id):
    return user_id


@task(priority=5, queue_name="high", timeout=2)
async def async_echo(value):
    return value


not_a_task = 42


@task(max_attempts=5, backoff_seconds=0.001)
def quick_retry(x):
    return x


@task(max_attempts=2, backoff_seconds=0.001)
def poison(x):
    return x


@task(takes_context=True, max_attempts=25, backoff_seconds=0.05)
def recorded_work(context, n, milliseconds):
    """Record the execution, work, then write a receipt and complete in one fenced transaction."""
    Execution.objects.create(job_id=context.job_id, pid=os.getpid(), attempt=context.attempt)
    time.sleep(milliseconds / 1000)
    with context.fenced_atomic() as fence:
        Receipt.objects.create(job_id=context.job_id, written_by=str(os.getpid()))
        fence.complete(n)
    return n


@task(max_attempts=5, backoff_seconds=0.05)
async def async_sleep(seconds):
    await asyncio.sleep(seconds)
    return os.getpid()


@task(max_attempts=3, backoff_seconds=0.05)
def kill_my_process():
    os._exit(3)


@task(timeout=0.3, max_attempts=2, backoff_seconds=0.01)
async def too_slow():
    await asyncio.sleep(5)


@task(takes_context=True, max_attempts=3, backoff_seconds=0.01)
def resumes_from_checkpoint(context):
    """Fails on its first attempt after saving a checkpoint; the retry sees it."""
    seen = context.last_checkpoint
    if context.attempt == 1:
        context.checkpoint({"step": 1})
        raise RuntimeError("first attempt fails after its checkpoint")
    return {"attempt": context.attempt, "resumed_from": seen}


@task(takes_context=True)
async def reports_progress(context, steps):
    for step in range(1, steps + 1):
        await context.aprogress(step, steps, f"step {step}")
    return steps


@task
def returns_a_set():
    return {1, 2}


@task
def returns_nul():
    return {"text": "a\x00b"}


@task
def returns_deep():
    value = []
    for _ in range(200):
        value = [value]
    return value


@task(takes_context=True, max_attempts=10, backoff_seconds=0.05)
def stays_alive(context, seconds):
    """Mark itself alive every 0.2 s for ``seconds``, through its own direct connection (not the
    worker's), and stop as soon as the worker says its lease may be lost."""
    execution = f"{os.getpid()}:{context.attempt}"
    with psycopg.connect(os.environ["LEASEQUEUE_ALIVE_DSN"], autocommit=True) as conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if context.should_stop:
                return None
            conn.execute(
                "INSERT INTO alive_mark (job_id, execution) VALUES (%s, %s)",
                [context.job_id, execution],
            )
            time.sleep(0.2)
    return execution


@task
async def atimes_its_sleep(seconds):
    """Sleeps; returns when its code started and ended, by the clock of its process."""
    started = time.time()
    await asyncio.sleep(seconds)
    return [started, time.time()]


@task
def times_its_sleep(seconds):
    started = time.time()
    time.sleep(seconds)
    return [started, time.time()]


@task
def pools_found():
    """The Django connection pools open in this worker process when the job starts."""
    from django_leasequeue.runtime.startup import connection_pools

    return sorted(connection_pools())


@task
def enqueues_a_backdated_job(a):
    """Enqueues add(a, a) due an hour ago: behind where a worker's polls have reached."""
    from datetime import timedelta

    from django.utils import timezone

    return add.using(run_after=timezone.now() - timedelta(hours=1)).enqueue(a, a).id
