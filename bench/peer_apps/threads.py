"""Thread pools of the benchmark's size for the systems that run sync code on asyncio's default
executor (PgQueuer's ``asyncio.to_thread``, Procrastinate's sync tasks), whose default size is
``min(32, cores + 4)``: 6 threads on 2 cores, where the other systems get ``--concurrency``.
"""

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

_sized: asyncio.AbstractEventLoop | None = None


def size_default_executor() -> None:
    """Give the running loop a default executor of ``LQPEERS_THREADS`` threads, once."""
    global _sized
    loop = asyncio.get_running_loop()
    if loop is not _sized:
        threads = int(os.environ.get("LQPEERS_THREADS", "10"))
        loop.set_default_executor(ThreadPoolExecutor(threads, thread_name_prefix="lqpeers"))
        _sized = loop


async def procrastinate_middleware(call_next, context, worker):
    """A Procrastinate worker middleware that sizes the pool before the first job runs."""
    size_default_executor()
    return await call_next()
