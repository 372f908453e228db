"""The systems that bench/peers.py measures, each behind the same small interface.

A system knows how to enqueue the benchmark's jobs (``noop``, ``write``: one row through
Django's ORM, ``awrite``: the same written ``async``, where the system has async jobs,
``stamp``: note the start time) one per call and in bulk, which commands start
its worker processes, how to count its finished jobs, and how to empty its tables between runs.
Every PostgreSQL-backed system keeps its own tables in the benchmark database; Celery keeps its
queue in its own Redis database.
"""

import asyncio
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("noop", "write", "awrite", "stamp")
PGQ_SCHEMA = "lqpeers_pgq"


@dataclass
class Bench:
    """What every system needs to know about the run."""

    processes: int
    concurrency: int
    sql: psycopg.Connection  # autocommit, for counts, truncates and ANALYZE
    dsn: str
    redis_url: str
    pgq_batch: int = 10  # PgQueuer's batch size; its default (``pgq run --batch-size``)


class System:
    """One queue under test. Subclasses fill in the blanks."""

    name = ""
    distribution = ""  # the PyPI name whose version is reported
    modules: tuple[str, ...] = ()  # importable modules the system needs
    burst = True  # its workers can run what is queued, then exit
    tables: tuple[str, ...] = ()  # its PostgreSQL tables (emptied by reset, analyzed)
    kinds: tuple[str, ...] = KINDS  # the jobs it has (Celery has no async ones)

    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    def missing(self) -> str | None:
        """Why this system cannot run here, or None."""
        absent = [m for m in self.modules if importlib.util.find_spec(m) is None]
        if absent:
            return f"{', '.join(absent)} not installed (pip install -e '.[bench]')"
        return None

    def version(self) -> str:
        return importlib.metadata.version(self.distribution)

    def setup(self) -> None:
        """Once per run, before anything else: schemas, connections, imports."""

    def reset(self) -> None:
        if self.tables:
            self.bench.sql.execute(f"TRUNCATE {', '.join(self.tables)} CASCADE")
            for table in self.tables:
                self.bench.sql.execute(f"VACUUM ANALYZE {table}")

    def analyze(self) -> None:
        """Fresh planner statistics for the queued backlog, as autovacuum keeps in production."""
        for table in self.tables:
            self.bench.sql.execute(f"ANALYZE {table}")

    def enqueue_each(self, kind: str, numbers: Sequence[int]) -> None:
        """One normal enqueue call per job, each its own transaction."""
        raise NotImplementedError

    def enqueue_bulk(self, kind: str, numbers: Sequence[int]) -> None:
        """All of ``numbers`` with the system's bulk call."""
        raise NotImplementedError

    def enqueue_marked(self, kind: str, n: int) -> float:
        """Enqueue one job; return the wall-clock time its enqueue committed.

        By default, the return of the call: right for a call that does nothing after its
        commit. Systems that do (signals, result objects) mark the commit itself, as a job
        may start before the call returns.
        """
        self.enqueue_each(kind, [n])
        return time.time()

    def worker_commands(self, burst: bool) -> list[list[str]]:
        """One command per process to start; ``burst``: exit once the queue is empty."""
        raise NotImplementedError

    def reconnect(self) -> None:
        """Replace the enqueuing connection with a new one, opened now: the old backend's
        statistics are flushed when it exits (bench/peer_costs.py)."""

    def done(self) -> int:
        """Jobs finished successfully since the last reset."""
        raise NotImplementedError

    def settings(self) -> dict:
        """The worker settings, for the results file."""
        return {}

    def count(self, query: str) -> int:
        return self.bench.sql.execute(query).fetchone()[0]


class LeaseQueue(System):
    name = "django-leasequeue"
    distribution = "django-leasequeue"
    tables = ("leasequeue_job",)

    def setup(self) -> None:
        from bench import tasks

        self.tasks = {
            "noop": tasks.anoop,
            "write": tasks.write_row,
            "awrite": tasks.awrite_row,
            "stamp": tasks.stamp,
        }

    def version(self) -> str:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return f"{super().version()}+{commit}" if commit else super().version()

    def reset(self) -> None:
        super().reset()
        from django_redis import get_redis_connection

        client = get_redis_connection("default")
        for key in client.scan_iter("lqpeers:*"):
            client.delete(key)

    def enqueue_each(self, kind: str, numbers: Sequence[int]) -> None:
        task = self.tasks[kind]
        for n in numbers:
            task.enqueue(n)

    def enqueue_bulk(self, kind: str, numbers: Sequence[int]) -> None:
        from django.db import transaction

        task = self.tasks[kind]
        with transaction.atomic():
            task.get_backend().enqueue_many([(task, (n,), {}) for n in numbers])

    def enqueue_marked(self, kind: str, n: int) -> float:
        return django_commit_time(lambda: self.tasks[kind].enqueue(n))

    def reconnect(self) -> None:
        reconnect_django()

    def worker_commands(self, burst: bool) -> list[list[str]]:
        command = [sys.executable, "-m", "django", "runworkers", "-v", "0"]
        command += ["--processes", str(self.bench.processes)]
        command += ["--concurrency", str(self.bench.concurrency)]
        return [[*command, "--burst"] if burst else command]

    def done(self) -> int:
        return self.count("SELECT count(*) FROM leasequeue_job WHERE status = 'succeeded'")

    def settings(self) -> dict:
        return {
            "worker": "manage.py runworkers --processes P --concurrency C (--burst for drains)",
            "tasks": "async no-op and stamp; sync write (C threads per process); async write "
            "(the ORM's acreate)",
            "wake-ups": "Redis",
        }


class PgQueuer(System):
    name = "PgQueuer"
    distribution = "pgqueuer"
    modules = ("pgqueuer", "asyncpg", "uvloop")
    tables = tuple(
        f"{PGQ_SCHEMA}.{table}" for table in ("pgqueuer", "pgqueuer_log", "pgqueuer_statistics")
    )
    entrypoints = {"noop": "noop", "write": "write_row", "awrite": "awrite_row", "stamp": "stamp"}

    def setup(self) -> None:
        """An asyncpg connection on a uvloop loop kept for the run; PgQueuer's schema."""
        os.environ["PGQUEUER_SCHEMA"] = PGQ_SCHEMA  # read by pgqueuer once, on first use
        import asyncpg
        import uvloop
        from pgqueuer.db import AsyncpgDriver
        from pgqueuer.queries import Queries

        self.loop = asyncio.Runner(loop_factory=uvloop.new_event_loop)
        self.connection = self.loop.run(asyncpg.connect(self.bench.dsn))
        self.queries = Queries(AsyncpgDriver(self.connection))
        if not self.loop.run(self.queries.schema_is_installed()):
            self.loop.run(self.queries.install())
        self.enqueued = 0

    def reset(self) -> None:
        super().reset()
        self.enqueued = 0

    def reconnect(self) -> None:
        import asyncpg
        from pgqueuer.db import AsyncpgDriver
        from pgqueuer.queries import Queries

        self.loop.run(self.connection.close())
        self.connection = self.loop.run(asyncpg.connect(self.bench.dsn))
        self.queries = Queries(AsyncpgDriver(self.connection))

    def enqueue_each(self, kind: str, numbers: Sequence[int]) -> None:
        async def each() -> None:
            for n in numbers:
                await self.queries.enqueue(self.entrypoints[kind], str(n).encode())

        self.loop.run(each())
        self.enqueued += len(numbers)

    def enqueue_bulk(self, kind: str, numbers: Sequence[int]) -> None:
        entrypoints = [self.entrypoints[kind]] * len(numbers)
        payloads = [str(n).encode() for n in numbers]
        self.loop.run(self.queries.enqueue(entrypoints, payloads, [0] * len(numbers)))
        self.enqueued += len(numbers)

    def max_concurrent_tasks(self) -> int:
        """PgQueuer refuses a cap below twice its batch size: at its default batch of 10,
        10 slots become 20."""
        return max(self.bench.concurrency, 2 * self.bench.pgq_batch)

    def worker_commands(self, burst: bool) -> list[list[str]]:
        command = [sys.executable, "-m", "bench.peer_apps.pgq"]
        command += ["--batch-size", str(self.bench.pgq_batch)]
        command += ["--max-concurrent-tasks", str(self.max_concurrent_tasks())]
        if burst:
            command += ["--mode", "drain"]
        return [command] * self.bench.processes

    def done(self) -> int:
        """Finished jobs leave the queue table (their log rows are written in the same
        statement), so what has left it is done."""
        return self.enqueued - self.count(f"SELECT count(*) FROM {PGQ_SCHEMA}.pgqueuer")

    def settings(self) -> dict:
        return {
            "worker": "pgqueuer.run (as pgq run) x P processes (--mode drain for drains)",
            "batch_size": self.bench.pgq_batch,
            "max_concurrent_tasks": self.max_concurrent_tasks(),
            "driver": "asyncpg, one connection per process, uvloop",
            "listen_notify": True,
            "tasks": "async no-op and stamp; write via asyncio.to_thread (C threads); async "
            "write (the ORM's acreate)",
        }


class Procrastinate(System):
    name = "Procrastinate"
    distribution = "procrastinate"
    modules = ("procrastinate",)
    tables = (
        "procrastinate_jobs",
        "procrastinate_events",
        "procrastinate_periodic_defers",
        "procrastinate_workers",
    )

    def setup(self) -> None:
        from bench.peer_apps import procrastinate_jobs as jobs

        self.tasks = {
            "noop": jobs.noop,
            "write": jobs.write_row,
            "awrite": jobs.awrite_row,
            "stamp": jobs.stamp,
        }

    def enqueue_each(self, kind: str, numbers: Sequence[int]) -> None:
        task = self.tasks[kind]
        for n in numbers:
            task.defer(n=n)

    def enqueue_bulk(self, kind: str, numbers: Sequence[int]) -> None:
        self.tasks[kind].batch_defer(*({"n": n} for n in numbers))

    def enqueue_marked(self, kind: str, n: int) -> float:
        return django_commit_time(lambda: self.tasks[kind].defer(n=n))

    def reconnect(self) -> None:
        reconnect_django()

    def worker_commands(self, burst: bool) -> list[list[str]]:
        command = [sys.executable, "-m", "django", "procrastinate", "worker", "-q", "lqpeers"]
        command += ["--concurrency", str(self.bench.concurrency)]
        if burst:
            command.append("--one-shot")
        return [command] * self.bench.processes

    def done(self) -> int:
        return self.count("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'")

    def settings(self) -> dict:
        return {
            "worker": "manage.py procrastinate worker --concurrency C x P processes "
            "(--one-shot for drains)",
            "connector": "Django integration: defers on Django's connection, workers on "
            "a psycopg pool",
            "listen_notify": True,
            "tasks": "async no-op and stamp; sync write (in a thread); async write (the ORM's "
            "acreate)",
        }


class Celery(System):
    name = "Celery"
    distribution = "celery"
    modules = ("celery", "kombu")
    burst = False
    kinds = ("noop", "write", "stamp")

    def setup(self) -> None:
        from bench.peer_apps import celery_app

        self.app = celery_app
        self.tasks = {
            "noop": celery_app.noop,
            "write": celery_app.write_row,
            "stamp": celery_app.stamp,
        }

    def version(self) -> str:
        return f"{super().version()} (kombu {importlib.metadata.version('kombu')})"

    def reset(self) -> None:
        from bench.peer_apps.common import redis_client

        client = redis_client()
        for key in ("unacked", "unacked_index", "unacked_mutex", self.app.QUEUE):
            client.delete(key)
        for key in client.scan_iter(f"{self.app.DONE_KEY}*"):
            client.delete(key)

    def enqueue_each(self, kind: str, numbers: Sequence[int]) -> None:
        task = self.tasks[kind]
        for n in numbers:
            task.delay(n)

    def enqueue_bulk(self, kind: str, numbers: Sequence[int]) -> None:
        from celery import group

        group(self.tasks[kind].s(n) for n in numbers).apply_async()

    def enqueue_marked(self, kind: str, n: int) -> float:
        """The time Celery's ``after_task_publish`` signal reports the message sent."""
        from celery.signals import after_task_publish

        sent = []

        def mark(**_) -> None:
            sent.append(time.time())

        after_task_publish.connect(mark, weak=False)
        try:
            self.tasks[kind].delay(n)
        finally:
            after_task_publish.disconnect(mark)
        return sent[0]

    def worker_commands(self, burst: bool) -> list[list[str]]:
        command = [sys.executable, "-m", "celery", "-A", "bench.peer_apps.celery_app", "worker"]
        command += ["-P", "threads", "-c", str(self.bench.concurrency), "-Q", self.app.QUEUE]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning"]
        return [[*command, "-n", f"lqpeers{i}@%h"] for i in range(self.bench.processes)]

    def done(self) -> int:
        from bench.peer_apps.common import redis_client

        client = redis_client()
        keys = list(client.scan_iter(f"{self.app.DONE_KEY}*"))
        return sum(int(value) for value in client.mget(keys)) if keys else 0

    def settings(self) -> dict:
        return {
            "worker": "celery worker -P threads -c C x P processes, --without-gossip "
            "--without-mingle --without-heartbeat",
            "broker": "Redis",
            "results": "ignored (no result backend)",
            "prefetch_multiplier": self.app.app.conf.worker_prefetch_multiplier,
            "tasks": "sync (Celery has no async tasks)",
        }


SYSTEMS = (LeaseQueue, PgQueuer, Procrastinate, Celery)


def django_commit_time(enqueue) -> float:
    """Run ``enqueue`` in a transaction of its own and return when that transaction committed:
    our on-commit callback is registered first, so it runs first after the commit."""
    from django.db import transaction

    committed = []
    with transaction.atomic():
        transaction.on_commit(lambda: committed.append(time.time()))
        enqueue()
    return committed[0]


def reconnect_django() -> None:
    from django.db import connection

    connection.close()
    connection.ensure_connection()


def worker_env(bench: Bench) -> dict[str, str]:
    """What every worker process is started with."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "bench.peer_settings",
        "PGQUEUER_SCHEMA": PGQ_SCHEMA,
        "LQPEERS_PG_DSN": bench.dsn,
        "LQPEERS_REDIS_URL": bench.redis_url,
        "LQPEERS_THREADS": str(bench.concurrency),
    }
