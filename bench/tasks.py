"""No-op tasks: the benchmark measures the queue, not the work.

``write_row``, ``awrite_row`` and ``stamp`` are the peer benchmark's (bench/peers.py): one
database write (a sync task, and the same written ``async``), and a note of when a job started.
``soak_work`` is the soak's (bench/soak.py).
"""

import os
import time

from bench.peer_apps import common
from django_leasequeue import task as leasequeue_task
from django_leasequeue.tasks_framework import task
from tests.support.models import Execution, Receipt


@task
async def anoop(n):
    return n


@task
def noop(n):
    return n


@task
def write_row(n):
    common.write_row(n)


@task
async def awrite_row(n):
    await common.awrite_row(n)


@task
async def stamp(n):
    common.record_start(n)


@leasequeue_task(takes_context=True, max_attempts=50, backoff_seconds=0.05)
def soak_work(context, n, milliseconds):
    """The soak's job (bench/soak.py): note the execution, work, then write a receipt and
    complete in one fenced transaction, so that lost jobs, re-runs and double commits show."""
    Execution.objects.create(job_id=context.job_id, pid=os.getpid(), attempt=context.attempt)
    time.sleep(milliseconds / 1000)
    with context.fenced_atomic() as fence:
        Receipt.objects.create(job_id=context.job_id, written_by=str(os.getpid()))
        fence.complete(n)
    return n


@task
def gather(results):
    """A chord's callback: how many results it was given."""
    return len(results)
