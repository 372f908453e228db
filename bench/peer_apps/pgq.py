"""PgQueuer's jobs and worker factory: asyncpg, one connection, as in PgQueuer's README (whose
factory is now an async context manager).

Workers: ``python -m bench.peer_apps.pgq [--mode drain]``, which runs ``pgqueuer.run`` on uvloop
exactly as ``pgq run bench.peer_apps.pgq:create`` would (LISTEN/NOTIFY on, batch size 10, the
defaults): ``pgq run`` of pgqueuer 1.6.0 fails at start with typer 0.29 (its ``--log-level``
reaches the logger as a string).
PgQueuer entrypoints must be ``async def``; its documented way to run blocking code is
``asyncio.to_thread``, whose pool we size to the benchmark's concurrency (``threads``) so that
the write job gets as many threads as the other systems' sync jobs.
"""

import argparse
import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import asyncpg
import pgqueuer
import uvloop
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.domain.types import QueueExecutionMode
from pgqueuer.models import Job

from bench.peer_apps import common, threads

DSN = os.environ.get("LQPEERS_PG_DSN", "postgresql://postgres@127.0.0.1:5432/lq_peers")


@asynccontextmanager
async def create() -> AsyncIterator[PgQueuer]:
    import django

    django.setup()  # the write job uses Django's ORM, like every other system's
    threads.size_default_executor()
    connection = await asyncpg.connect(DSN)
    pgq = PgQueuer(AsyncpgDriver(connection))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        pass

    @pgq.entrypoint("write_row")
    async def write_row(job: Job) -> None:
        await asyncio.to_thread(common.write_row, int(job.payload))

    @pgq.entrypoint("awrite_row")
    async def awrite_row(job: Job) -> None:
        await common.awrite_row(int(job.payload))

    @pgq.entrypoint("stamp")
    async def stamp(job: Job) -> None:
        common.record_start(int(job.payload))

    try:
        yield pgq
    finally:
        await connection.close()


def main() -> None:
    """``pgq run``'s options that the benchmark uses, with its defaults."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--max-concurrent-tasks", type=int, default=None)
    parser.add_argument("--dequeue-timeout", type=float, default=30.0)
    parser.add_argument("--mode", default="continuous", choices=["continuous", "drain"])
    args = parser.parse_args()
    worker = pgqueuer.run(
        create,
        batch_size=args.batch_size,
        max_concurrent_tasks=args.max_concurrent_tasks,
        dequeue_timeout=timedelta(seconds=args.dequeue_timeout),
        mode=QueueExecutionMode[args.mode],
    )
    uvloop.run(worker)


if __name__ == "__main__":
    main()
