"""Procrastinate's jobs, through its Django integration (``procrastinate.contrib.django``).

Workers: ``python -m django procrastinate worker --concurrency 10`` (listen/notify on, the
default). The no-op and the stamp are ``async def`` (they run on the worker's loop); the write
is a sync task, which Procrastinate runs in a thread; the async write awaits the ORM's async
insert.
"""

from procrastinate.contrib.django import app

from bench.peer_apps import common

QUEUE = "lqpeers"


@app.task(queue=QUEUE)
async def noop(n: int) -> None:
    pass


@app.task(queue=QUEUE)
def write_row(n: int) -> None:
    common.write_row(n)


@app.task(queue=QUEUE)
async def awrite_row(n: int) -> None:
    await common.awrite_row(n)


@app.task(queue=QUEUE)
async def stamp(n: int) -> None:
    common.record_start(n)
