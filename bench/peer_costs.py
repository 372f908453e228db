"""Where each job's resources go, per system, for bench/peers.py (issue #25): a ``Meter`` reads
counters at the start and the end of a window (an enqueue, a drain) and gives the difference per
job.

- **CPU of the enqueuing process**: this process's rusage (every thread of it).
- **CPU of the workers**: the rusage of waited-for children; a drain's window ends once its
  workers have exited and been waited for (a supervisor waits for its own children, so theirs
  is in it too).
- **PostgreSQL backend CPU**: utime + stime from ``/proc/<pid>/stat`` of the client backends
  connected to the benchmark's database (found in ``pg_stat_activity``), sampled at every look
  at the drain's progress; a backend seen first during the window counts from zero, one that
  exits loses what it used since its last sample (at most one poll interval). Needs the server
  on this machine; elsewhere the figure is missing.
- **Statements**: ``pg_stat_statements`` calls in the benchmark's database (BEGIN and COMMIT
  included: each is a round trip of its own), when the extension is loaded
  (``shared_preload_libraries``); the benchmark's own statements are not tracked.
- **Transactions**: ``pg_stat_database.xact_commit + xact_rollback`` of the benchmark's
  database, less the benchmark's own. A backend flushes these counters at most once a second
  (at exit always), so a window ends only when every backend it saw has gone, and the
  benchmark's own connection is replaced at each end.
- **Redis commands**: ``INFO commandstats`` calls (INFO left out), over the whole
  Redis server: exact only on a Redis of the benchmark's own.
- **WAL bytes**: ``pg_current_wal_lsn()`` difference, over the whole cluster: exact only on a
  cluster of the benchmark's own.
"""

import contextlib
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import psycopg

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: How long a window's end waits for the backends it saw to exit (and flush their counters).
BACKEND_EXIT_WAIT = 10.0


class CountingConnection(psycopg.Connection):
    """The benchmark's own autocommit connection, counting its statements (each one is a
    transaction) so that a window can leave them out."""

    statements = 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.statements += 1
        return super().execute(*args, **kwargs)


@dataclass
class Costs:
    """Per job (or in total, before ``per_job``); None: not measurable here."""

    enqueuer_cpu_us: float | None = None
    worker_cpu_us: float | None = None
    backend_cpu_us: float | None = None
    statements: float | None = None
    transactions: float | None = None
    redis_commands: float | None = None
    wal_bytes: float | None = None

    def per_job(self, jobs: int, scale: dict[str, float]) -> "Costs":
        return Costs(
            **{
                f.name: None
                if getattr(self, f.name) is None
                else getattr(self, f.name) * scale.get(f.name, 1) / jobs
                for f in fields(self)
            }
        )

    def minus(self, other: "Costs") -> "Costs":
        return Costs(
            **{
                f.name: None
                if getattr(self, f.name) is None or getattr(other, f.name) is None
                else getattr(self, f.name) - getattr(other, f.name)
                for f in fields(self)
            }
        )


#: Costs fields in seconds, reported in microseconds.
MICROSECONDS = {"enqueuer_cpu_us": 1e6, "worker_cpu_us": 1e6, "backend_cpu_us": 1e6}


@dataclass
class _Snapshot:
    self_cpu: float
    children_cpu: float
    statements: int | None
    transactions: int
    redis_calls: int | None
    wal_lsn: int


class Meter:
    """Counters of one benchmark database, read from a connection to the ``postgres`` database
    (so that reading them adds nothing to what they count)."""

    def __init__(self, bench: Any, server_dsn: str, database: str, redis_clients: list) -> None:
        self.bench = bench
        self.database = database
        self.stats = psycopg.connect(f"{server_dsn}/postgres", autocommit=True)
        self.redis_clients = redis_clients
        self.pgss = self._pgss_available()
        self.proc = self._proc_readable()
        self._replace_bench_connection()
        self._start: _Snapshot | None = None
        self._bench_statements = 0
        self._baseline: dict[int, float] = {}  # backend pid -> CPU seconds at window start
        self._preexisting: set[int] = set()
        self._latest: dict[int, float] = {}

    def _pgss_available(self) -> bool:
        loaded = self.stats.execute("SHOW shared_preload_libraries").fetchone()[0]
        if "pg_stat_statements" not in loaded:
            return False
        with psycopg.connect(self.bench.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        self.stats.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return True

    def _proc_readable(self) -> bool:
        pid = self.stats.info.backend_pid
        return _proc_cpu(pid) is not None

    def _replace_bench_connection(self) -> None:
        """A fresh benchmark connection: the old one's counters are flushed when it exits."""
        old = getattr(self.bench, "sql", None)
        if isinstance(old, CountingConnection):
            self._bench_statements += old.statements
            pid = old.info.backend_pid
            old.close()
            self._wait_gone({pid})
        self.bench.sql = CountingConnection.connect(self.bench.dsn, autocommit=True)
        if self.pgss:
            self.bench.sql.execute("SET pg_stat_statements.track = 'none'")
            self.bench.sql.statements -= 1  # not in a window: the connection is new

    def _bench_total(self) -> int:
        return self._bench_statements + self.bench.sql.statements

    def _snapshot(self) -> _Snapshot:
        me = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        xacts, lsn = self.stats.execute(
            "SELECT xact_commit + xact_rollback, pg_current_wal_lsn() - '0/0'::pg_lsn "
            "FROM pg_stat_database WHERE datname = %s",
            [self.database],
        ).fetchone()
        statements = None
        if self.pgss:
            statements = self.stats.execute(
                "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s "
                "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s",
                [self.database],
            ).fetchone()[0]
        return _Snapshot(
            me.ru_utime + me.ru_stime,
            children.ru_utime + children.ru_stime,
            statements,
            int(xacts) - self._bench_total(),
            self._redis_calls(),
            int(lsn),
        )

    def _redis_calls(self) -> int | None:
        total = 0
        for client in self.redis_clients:
            try:
                stats = client.info("commandstats")
            except Exception:
                return None
            total += sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info")
        return total

    def _backends(self) -> set[int]:
        rows = self.stats.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s "
            "AND backend_type = 'client backend' AND pid <> %s",
            [self.database, self.bench.sql.info.backend_pid],
        ).fetchall()
        return {pid for (pid,) in rows}

    def poll(self, known_only: bool = False) -> None:
        """Sample the backends' CPU (call often during a window); ``known_only``: only those
        seen already (a window's last look)."""
        if not self.proc:
            return
        for pid in set(self._latest) if known_only else self._backends():
            cpu = _proc_cpu(pid)
            if cpu is not None:
                self._latest[pid] = cpu
                self._baseline.setdefault(pid, 0.0)

    def start(self) -> None:
        self._replace_bench_connection()
        self._latest = {}
        self._baseline = {}
        if self.proc:
            for pid in self._backends():
                cpu = _proc_cpu(pid)
                if cpu is not None:
                    self._baseline[pid] = self._latest[pid] = cpu
        self._preexisting = set(self._latest)
        self._start = self._snapshot()

    def stop(self, reconnect: Callable[[], None] | None = None) -> Costs:
        """The window's totals. Waits for the backends that connected during the window to
        exit (workers' connections: their counters are flushed at exit); with ``reconnect``
        (``System.reconnect``: the enqueuing process's connection replaced), also for those
        that were there before. The CPU of this process and of its children is read first."""
        me = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.poll(known_only=True)
        seen = set(self._latest) - self._preexisting
        if reconnect is not None:
            reconnect()
            seen = set(self._latest)
        self._replace_bench_connection()
        self._wait_gone(seen)
        end, start = self._snapshot(), self._start
        assert start is not None
        end.self_cpu = me.ru_utime + me.ru_stime
        end.children_cpu = children.ru_utime + children.ru_stime
        backend_cpu = (
            sum(self._latest[pid] - self._baseline[pid] for pid in self._latest)
            if self.proc
            else None
        )
        return Costs(
            enqueuer_cpu_us=end.self_cpu - start.self_cpu,
            worker_cpu_us=end.children_cpu - start.children_cpu,
            backend_cpu_us=backend_cpu,
            statements=None
            if end.statements is None or start.statements is None
            else end.statements - start.statements,
            transactions=end.transactions - start.transactions,
            redis_commands=None
            if end.redis_calls is None or start.redis_calls is None
            else end.redis_calls - start.redis_calls,
            wal_bytes=end.wal_lsn - start.wal_lsn,
        )

    def _wait_gone(self, pids: set[int]) -> None:
        deadline = time.monotonic() + BACKEND_EXIT_WAIT
        while pids and time.monotonic() < deadline:
            rows = self.stats.execute(
                "SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)]
            ).fetchall()
            if not rows:
                return
            time.sleep(0.01)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stats.close()


def _proc_cpu(pid: int) -> float | None:
    """utime + stime of a process, in seconds; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            after_name = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(after_name[11]) + int(after_name[12])) / CLOCK_TICKS
