"""No-op tasks: the benchmark measures the queue, not the work.

``write_row`` and ``stamp`` are the peer benchmark's (bench/peers.py): one database write, and a
note of when a job started.
"""

from bench.peer_apps import common
from django_leasequeue.tasks_framework import task


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
async def stamp(n):
    common.record_start(n)
