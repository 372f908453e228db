"""Wakeups in Redis: lists of job ids per queue. They carry no payload and are optional.

The same keyspace holds the viewers of each job (and workflow): the websockets of the browser
pages that follow it live, so that workers publish live events only for jobs someone is looking
at; and the websockets each progress token holds open (``progress/viewers.py``).

Losing a wakeup costs latency only: workers also poll PostgreSQL, and the recover sweep re-sends
wakeups for due jobs nobody claimed. So every Redis failure here is swallowed, and logged as an
outage of the backend's Redis (``outage_log``): its first failure, summaries, its end.
"""

import hashlib
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from django_redis import get_redis_connection
from redis.exceptions import RedisError, ResponseError

from django_leasequeue import replyless
from django_leasequeue.outage_log import OutageLog
from django_leasequeue.tasks_framework import InvalidTaskBackend, task_backends

logger = logging.getLogger(__name__)

# Adds (or keeps) a member in a sorted set of websockets, in one step Redis runs alone: drops
# the members whose time is up, gives this one ``ttl`` seconds more (both by Redis's clock, the
# one every web server shares), keeps the key as long as its newest member, and returns how
# many members are left. A key holding anything else (garbage) is replaced.
_JOIN = """
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then redis.call('DEL', KEYS[1]) end
local now = tonumber(redis.call('TIME')[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
"""

# After a failed push, enqueue skips Redis this long instead of paying a timeout per job.
_PAUSE_AFTER_FAILURE_SECONDS = 5.0


class Wakeups:
    """The Redis keys of one backend (``redis_alias``, ``key_prefix``) and the calls on them."""

    def __init__(self, redis_alias: str | None, key_prefix: str) -> None:
        self.redis_alias = redis_alias
        self.key_prefix = key_prefix
        self._paused_until = 0.0
        self._multi_pop = True
        # Every failed Redis call of this process, one outage at a time (the claimer's too).
        self.outage = OutageLog(
            "Redis",
            logger,
            meanwhile="wakeups are skipped and workers find jobs by polling PostgreSQL",
        )

    @property
    def enabled(self) -> bool:
        return self.redis_alias is not None

    def key(self, queue_name: str) -> str:
        return f"{self.key_prefix}:wakeups:{queue_name}"

    def client(self) -> Any:
        """django-redis's client: a redis-py ``Redis``, typed ``Any`` because redis-py's
        replies are unions of every shape a command may return."""
        return get_redis_connection(self.redis_alias)

    def push(self, jobs: Iterable[tuple[str, str]]) -> bool:
        """RPUSH ``(queue_name, job_id)`` pairs in one round trip; False if Redis is unavailable."""
        return self._push(jobs, wait_for_reply=True)

    def send(self, jobs: Iterable[tuple[str, str]]) -> bool:
        """As ``push``, without waiting for Redis's reply (``replyless.py``): enqueue's wakeups.
        False when Redis could not be reached; True when the push was sent."""
        return self._push(jobs, wait_for_reply=False)

    def _push(self, jobs: Iterable[tuple[str, str]], wait_for_reply: bool) -> bool:
        by_queue: dict[str, list[str]] = {}
        for queue_name, job_id in jobs:
            by_queue.setdefault(queue_name, []).append(job_id)
        if not by_queue or not self.enabled or time.monotonic() < self._paused_until:
            return False
        try:
            client = self.client()
            if not wait_for_reply:
                commands = [("RPUSH", self.key(name), *ids) for name, ids in by_queue.items()]
                replyless.sender.send(client, commands)
            elif len(by_queue) == 1:  # one command needs no pipeline
                [(queue_name, ids)] = by_queue.items()
                client.rpush(self.key(queue_name), *ids)
            else:
                pipe = client.pipeline(transaction=False)
                for queue_name, ids in by_queue.items():
                    pipe.rpush(self.key(queue_name), *ids)
                pipe.execute()
        except Exception as exc:
            # Called after a commit, where nothing may raise to the caller: an outage, or a
            # cache alias that is not django-redis, costs latency only.
            self._paused_until = time.monotonic() + _PAUSE_AFTER_FAILURE_SECONDS
            count = sum(map(len, by_queue.values()))
            self.outage.failed(f"{count} job(s) enqueued in PostgreSQL woke no worker ({exc})")
            return False
        self.outage.succeeded()
        return True

    def pop(self, queue_names: Sequence[str], max_count: int, timeout: float) -> list[bytes]:
        """Block up to ``timeout`` for a wakeup, then take up to ``max_count`` ids at once;
        ``timeout=0`` takes what is there without waiting.

        One round trip (``BLMPOP``, or ``LMPOP`` without waiting) on Redis 7; two (``BLPOP``
        then ``LPOP``) on older servers. Raises RedisError when Redis is unreachable; the worker
        then polls PostgreSQL.
        """
        client = self.client()
        keys = [self.key(name) for name in queue_names]
        if self._multi_pop:
            try:
                if timeout > 0:
                    popped = client.blmpop(
                        timeout, len(keys), *keys, direction="LEFT", count=max_count
                    )
                else:
                    popped = client.lmpop(len(keys), *keys, direction="LEFT", count=max_count)
            except ResponseError:  # unknown command: Redis older than 7
                self._multi_pop = False
            else:
                return popped[1] if popped else []
        if timeout <= 0:
            return _pop_now(client, keys, max_count)
        popped = client.blpop(keys, timeout=timeout)
        if popped is None:
            return []
        key, first = popped
        more = client.lpop(key, max_count - 1) if max_count > 1 else None
        return [first, *(more or [])]

    def push_where_idle(self, jobs: Iterable[tuple[str, str]]) -> bool:
        """Push only to queues whose wakeup list is empty: a backlog needs no more wakeups."""
        jobs = list(jobs)
        queue_names = sorted({queue_name for queue_name, _ in jobs})
        try:
            pipe = self.client().pipeline(transaction=False)
            for queue_name in queue_names:
                pipe.llen(self.key(queue_name))
            idle = {
                name for name, length in zip(queue_names, pipe.execute(), strict=True) if not length
            }
        except RedisError as exc:
            self.outage.failed(f"due jobs not woken again ({exc})")
            return False
        return self.push((queue_name, job_id) for queue_name, job_id in jobs if queue_name in idle)

    def watch_key(self, object_id: str) -> str:
        """The sorted set of the websockets following a job (or workflow) live."""
        return f"{self.key_prefix}:viewers:{object_id}"

    def token_key(self, token: str) -> str:
        """The sorted set of the websockets a progress token holds open (its digest: the
        token itself stays out of Redis)."""
        return f"{self.key_prefix}:token-sockets:{hashlib.sha256(token.encode()).hexdigest()}"

    def join(self, keys: Sequence[str], member: str, ttl_seconds: int) -> list[int]:
        """Add ``member`` to these sets (or keep it there) for ``ttl_seconds`` more; how many
        live members each holds now, in one round trip. Raises RedisError."""
        pipe = self.client().pipeline(transaction=False)
        for key in keys:
            pipe.eval(_JOIN, 1, key, member, ttl_seconds)
        return [int(count) for count in pipe.execute()]

    def leave(self, keys: Sequence[str], member: str) -> None:
        """Take ``member`` out of these sets (nothing happens where it is not). Raises
        RedisError."""
        pipe = self.client().pipeline(transaction=False)
        for key in keys:
            pipe.zrem(key, member)
        pipe.execute()

    def watched(self, object_ids: Sequence[str]) -> set[str]:
        """Which of these jobs (or workflows) have live viewers, in one round trip (a key that
        holds garbage has none). Raises RedisError when Redis cannot be reached."""
        if not object_ids or not self.enabled:
            return set()
        pipe = self.client().pipeline(transaction=False)
        for object_id in object_ids:
            pipe.zcard(self.watch_key(object_id))
        counts = pipe.execute(raise_on_error=False)
        return {
            object_id
            for object_id, count in zip(object_ids, counts, strict=True)
            if isinstance(count, int) and count > 0
        }


def wakeups_of_backend(alias: str) -> Wakeups | None:
    """The wakeups of ``TASKS[alias]`` when it is a lease-queue backend; None otherwise.

    Found by attribute rather than by class, so that this module does not import the backend
    (whose ``cancel`` runs the operations that call this).
    """
    try:
        backend = task_backends[alias]
    except InvalidTaskBackend:
        return None  # not configured in this process: its workers find the jobs by polling
    wakeups = getattr(backend, "wakeups", None)
    return wakeups if isinstance(wakeups, Wakeups) else None


def _pop_now(client: Any, keys: list[str], max_count: int) -> list[bytes]:
    """Without waiting: up to ``max_count`` ids from the first non-empty list (Redis < 7)."""
    for key in keys:
        popped = client.lpop(key, max_count)
        if popped:
            return popped
    return []
