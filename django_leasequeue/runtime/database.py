"""A worker's psycopg connection that reconnects when PostgreSQL drops it."""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial

import psycopg

from django_leasequeue.outage_log import OutageLog
from django_leasequeue.runtime.connection import connect_async
from django_leasequeue.sql.executor import aexecute
from django_leasequeue.sql.statement import Statement

logger = logging.getLogger(__name__)

_RECONNECT_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)
# How many times a statement PostgreSQL aborted for a deadlock runs again.
_DEADLOCK_RETRIES = 5
# What PostgreSQL says when it refuses a login for good (libpq gives connect errors no
# SQLSTATE): waiting does not help, unlike a server that is down, starting or full.
_REFUSED_LOGIN = (
    "does not exist",  # database or role
    "authentication failed",
    "no pg_hba.conf entry",
    "pg_hba.conf rejects connection",
    "is not permitted to log in",
    "permission denied for database",
)


def login_refused(exc: psycopg.OperationalError) -> bool:
    """Whether a failed connect is PostgreSQL refusing this login (not a passing outage)."""
    message = str(exc)
    return "FATAL" in message and any(reason in message for reason in _REFUSED_LOGIN)


def postgres_outage() -> OutageLog:
    """The outage log of one worker process's PostgreSQL connections."""
    return OutageLog("PostgreSQL", logger, meanwhile=f"retrying every {_RECONNECT_DELAYS[-1]:g} s")


class Database:
    """Runs protocol statements; on a lost connection, reconnects with backoff and runs again.

    Running a statement again is safe for every step of the protocol: claims that may have
    applied are recovered when their lease expires, and fenced writes that did apply report
    "lease lost" on the second run (which is logged, never applied twice).

    One connection serves many coroutines (claims, completions, progress, ...). Each statement
    and each whole transaction holds the connection's lock, so no statement ever runs inside
    another coroutine's transaction: a statement that fails, or a transaction rolled back,
    takes nothing else with it. The lock belongs to the connection: a statement stuck on an
    abandoned connection does not hold up the next one.
    """

    def __init__(
        self,
        database: str,
        *,
        prepared_statements: bool,
        name: str,
        lease_seconds: float,
        outage: OutageLog | None = None,
    ) -> None:
        self.database = database
        self.prepared_statements = prepared_statements
        self.name = name
        self.lease_seconds = lease_seconds
        # Lost connections and failed connects, logged as outages (shared by the connections
        # of one worker process: one outage, one set of lines).
        self.outage = outage or postgres_outage()
        self._conn: psycopg.AsyncConnection | None = None
        self._conn_lock = asyncio.Lock()
        self._connecting = asyncio.Lock()
        self._abandoned: set[asyncio.Task] = set()

    async def run[T](self, statement: Statement[T]) -> T:
        return await self._retrying(partial(aexecute, statement), statement.query.name)

    async def transaction[T](
        self, work: Callable[[psycopg.AsyncConnection], Awaitable[T]], name: str
    ) -> T:
        """Run ``work`` (several statements) in one transaction; on a lost connection or a
        deadlock it was rolled back whole, and runs again."""
        return await self._retrying(partial(_in_transaction, work), name)

    async def _retrying[T](
        self, work: Callable[[psycopg.AsyncConnection], Awaitable[T]], name: str
    ) -> T:
        attempt = 0
        while True:
            conn, lock = await self._connection()
            try:
                async with lock:
                    return await work(conn)
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
                # The statement was rolled back whole (autocommit): running it again is safe.
                # Heartbeats and completions of one worker lock the same rows on two
                # connections; ids are sent sorted, which makes this rare, not impossible.
                if attempt >= _DEADLOCK_RETRIES:
                    raise
                logger.info("%s on %s: running it again.", type(exc).__name__, name)
                attempt += 1
                continue
            except psycopg.OperationalError as exc:
                if not conn.broken and not conn.closed:
                    raise
                delay = _RECONNECT_DELAYS[min(attempt, len(_RECONNECT_DELAYS) - 1)]
                self.outage.failed(f"connection {self.name} lost during {name} ({exc})")
                if self._conn is conn:
                    self._conn = None
                attempt += 1
                await asyncio.sleep(delay)

    async def _connection(self) -> tuple[psycopg.AsyncConnection, asyncio.Lock]:
        """The connection and its lock; one coroutine connects while the others wait for it."""
        async with self._connecting:
            attempt = 0
            while self._conn is None or self._conn.closed:
                try:
                    conn = await connect_async(
                        self.database,
                        prepared_statements=self.prepared_statements,
                        lease_seconds=self.lease_seconds,
                    )
                except psycopg.OperationalError as exc:
                    if login_refused(exc):
                        raise
                    delay = _RECONNECT_DELAYS[min(attempt, len(_RECONNECT_DELAYS) - 1)]
                    self.outage.failed(f"cannot connect ({exc})")
                    attempt += 1
                    await asyncio.sleep(delay)
                else:
                    self._conn, self._conn_lock = conn, asyncio.Lock()
                    self.outage.succeeded()
            return self._conn, self._conn_lock

    def abandon(self, statement: asyncio.Task) -> None:
        """Give up on a statement that got no answer in time, and on its connection: the next
        statement connects afresh. The old one is cancelled and closed in the background (a
        cancel of a statement over a dead link can itself wait for seconds)."""
        conn, self._conn = self._conn, None
        statement.cancel()
        closing = asyncio.create_task(self._close_after(statement, conn))
        self._abandoned.add(closing)
        closing.add_done_callback(self._abandoned.discard)

    @staticmethod
    async def _close_after(statement: asyncio.Task, conn: psycopg.AsyncConnection | None) -> None:
        with contextlib.suppress(BaseException):
            await statement
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


async def _in_transaction[T](
    work: Callable[[psycopg.AsyncConnection], Awaitable[T]], conn: psycopg.AsyncConnection
) -> T:
    async with conn.transaction():
        return await work(conn)
