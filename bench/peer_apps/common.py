"""What the jobs of every system share: the one-row write and the pickup-latency stamp.

Every system's write job calls ``write_row`` (Django's ORM, ``bench.PeerRow``), so the write
costs the same everywhere and the benchmark compares the queues, not the database code; the
same job written ``async`` (where a system has async jobs) awaits ``awrite_row``, the ORM's
async form of the same insert.
"""

import os
import time

import redis

#: Redis database of the peer benchmark: Celery's broker, stamps, Celery's completion counts.
REDIS_URL = os.environ.get("LQPEERS_REDIS_URL", "redis://127.0.0.1:6379/13")
STAMPS_KEY = "lqpeers:stamps"

_client: redis.Redis | None = None


def redis_client() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(REDIS_URL)
    return _client


def record_start(n: int) -> None:
    """Note the wall-clock time a job started; the benchmark compares it with its enqueue."""
    started = time.time()
    redis_client().rpush(STAMPS_KEY, f"{n} {started!r}")


def write_row(n: int) -> None:
    from bench.models import PeerRow

    PeerRow.objects.create(n=n)


async def awrite_row(n: int) -> None:
    from bench.models import PeerRow

    await PeerRow.objects.acreate(n=n)
