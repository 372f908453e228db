"""Runs statements: ``execute`` on Django's connection (joining the caller's transaction) or
``aexecute`` on a worker's psycopg ``AsyncConnection``, each result row read as a dict by
column name; and writes rows with COPY (``JobCopy``, ``copy_rows``) in the caller's
transaction."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import psycopg
from django.db import connections

from django_leasequeue.sql import QUERIES, Query
from django_leasequeue.sql.records import NewJob
from django_leasequeue.sql.statement import Row, Statement


def execute[T](statement: Statement[T], database: str = "default") -> T:
    """Run on Django's connection ``database``: inside the caller's transaction if one is open."""
    with connections[database].cursor() as cursor:
        cursor.execute(statement.query.sql, statement.params)
        result = cursor.pgresult
        if result is None or not result.nfields:
            return statement.read([])
        rows = cursor.fetchall()
        return statement.read(_as_dicts(statement.query, cursor, result.nfields, rows))


async def aexecute[T](
    statement: Statement[T], conn: psycopg.AsyncConnection, *, prepare: bool | None = None
) -> T:
    """Run on a worker's psycopg connection (see ``connection.connect_async``)."""
    async with conn.cursor() as cursor:
        await cursor.execute(statement.query.sql, statement.params, prepare=prepare)
        result = cursor.pgresult
        if result is None or not result.nfields:
            return statement.read([])
        rows = await cursor.fetchall()
        return statement.read(_as_dicts(statement.query, cursor, result.nfields, rows))


_COLUMN_NAMES: dict[str, list[str]] = {}


def _as_dicts(query: Query, cursor: Any, nfields: int, rows: list[tuple]) -> list[Row]:
    """``rows`` of a result with ``nfields`` fields, as dicts by column name."""
    # A named query's columns are fixed by its text: read their names once, not per round trip
    # (psycopg builds the description anew at each read). Read them again if their count
    # changed: a migration altered a function's row type under this running process.
    names = _COLUMN_NAMES.get(query.name)
    if names is None or len(names) != nfields:
        names = _COLUMN_NAMES[query.name] = [column.name for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in rows]


class JobCopy:
    """Bulk insert of jobs without unique keys with COPY, in the caller's transaction.

    COPY is several times faster than INSERT for large batches, and rows stream to the server
    while the caller keeps working (``write`` returns before the server has stored the row).
    ``now`` is the database time stamped as every row's ``enqueued_at``. ``write`` gives the
    columns of ``copy_jobs`` in their order, ``job_columns.COPIED_JOB_COLUMNS`` (tested).
    """

    def __init__(self, database: str = "default") -> None:
        self._database = database

    def __enter__(self) -> "JobCopy":
        self._cursor = connections[self._database].cursor()
        self._cursor.execute(QUERIES["database_now"].sql)
        self.now: datetime = self._cursor.fetchone()[0]
        self._copy_context = self._cursor.cursor.copy(QUERIES["copy_jobs"].sql)
        self._write_row = self._copy_context.__enter__().write_row
        return self

    def write(self, job: NewJob) -> None:
        task = job.task
        now = self.now
        run_after = task.run_after or now
        self._write_row(
            (
                job.id,
                job.task_path,
                task.queue_name,
                task.priority,
                task.backend,
                job.args_json,
                job.kwargs_json,
                run_after,
                now,
                job.max_attempts,
                job.timeout_seconds,
                job.backoff_seconds,
                job.expires_at(run_after),
                job.meta_json,
            )
        )

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._copy_context.__exit__(*exc_info)
        finally:
            self._cursor.close()


def copy_rows(query_name: str, rows: Iterable[Sequence[Any]], database: str = "default") -> None:
    """COPY ``rows`` with the named ``COPY ... FROM STDIN`` statement, in the caller's
    transaction on Django's connection (rows stream while the caller builds the next ones)."""
    with (
        connections[database].cursor() as cursor,
        cursor.cursor.copy(QUERIES[query_name].sql) as copy,
    ):
        for row in rows:
            copy.write_row(row)
