"""The lease protocol: every step of a job's life as a named SQL statement, sync and async.

A step is built as a ``Statement`` (query from ``queries.sql``, parameters, and how to read the
rows back) and run with ``execute`` on Django's connection (joining the caller's transaction) or
``aexecute`` on the worker's psycopg ``AsyncConnection``. Worker writes are fenced by ``Lease``:
a fenced step returns False (or None) when the lease was lost, and nothing was written.
"""

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

import psycopg
from django.db import connections

from django_leasequeue import jsonargs
from django_leasequeue.sql import QUERIES, Query
from django_leasequeue.status import CancelOutcome, JobStatus
from django_leasequeue.tasks_framework import Task

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Statement[T]:
    """One named query with its parameters and the reader of its result rows."""

    query: Query
    params: dict[str, Any]
    read: Callable[[list[Row]], T]


@dataclass(frozen=True, slots=True)
class Lease:
    """The fencing token a claim hands out: only its holder may write the job."""

    job_id: UUID
    lease_version: int


class NewJob(NamedTuple):
    """A job about to be enqueued, its options resolved against the backend's defaults.

    A NamedTuple rather than a frozen dataclass: bulk enqueue builds one per job, and a frozen
    dataclass's ``__init__`` costs several times more.
    """

    id: str  # a UUIDv7, as text (the form TaskResult, COPY and Redis all use)
    task: Task
    task_path: str
    args: list[Any]
    kwargs: dict[str, Any]
    args_json: str
    kwargs_json: str
    max_attempts: int
    timeout_seconds: float | None
    backoff_seconds: float
    unique_key: str | None


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job a worker has just claimed, with everything needed to run it."""

    lease: Lease
    task_path: str
    queue_name: str
    priority: int
    backend: str
    args: list[Any]
    kwargs: dict[str, Any]
    attempt: int
    max_attempts: int
    timeout_seconds: float | None
    backoff_seconds: float
    checkpoint: Any
    enqueued_at: datetime
    started_at: datetime
    last_attempted_at: datetime
    worker_ids: list[str]
    errors: list[dict[str, Any]]
    # Why the row could not be decoded (the job is then failed, never run), or None.
    problem: str | None = None

    @property
    def id(self) -> UUID:
        return self.lease.job_id

    @classmethod
    def from_row(cls, row: Row) -> "ClaimedJob":
        """Decode a claimed row; a row that cannot be decoded gives a job carrying ``problem``."""
        lease = Lease(row.pop("id"), row.pop("lease_version"))
        raw = {name: row.pop(name) for name in _JSON_COLUMNS}
        try:
            decoded = {name: _loads(text) for name, text in raw.items() if text is not None}
            problem = _shape_problem(decoded.get("args"), decoded.get("kwargs"))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            problem = f"cannot be decoded ({type(exc).__name__}: {str(exc)[:200]})"
        if problem is None:
            return cls(
                lease=lease,
                args=decoded["args"],
                kwargs=decoded["kwargs"],
                checkpoint=decoded.get("checkpoint"),
                worker_ids=decoded["worker_ids"],
                errors=decoded["errors"],
                **row,
            )
        sizes = ", ".join(f"{name} {len(text or ''):,} bytes" for name, text in raw.items())
        return cls(
            lease=lease,
            args=[],
            kwargs={},
            checkpoint=None,
            worker_ids=[],
            errors=[],
            problem=f"The stored job {problem}; {sizes}.",
            **row,
        )


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    """Which of the presented leases are still held, which of those were renewed (a row an
    operator holds locked is held but not renewed this time), and which should stop."""

    held: frozenset[UUID]
    renewed: frozenset[UUID]
    cancel_requested: frozenset[UUID]


@dataclass(frozen=True, slots=True)
class FailOutcome:
    """Where a failed attempt left its job: ``retrying`` (with its next run) or ``failed``."""

    status: str
    run_after: datetime


@dataclass(frozen=True, slots=True)
class SweptJob:
    id: UUID
    status: str
    queue_name: str


_JSON_COLUMNS = ("args", "kwargs", "checkpoint", "worker_ids", "errors")
_EMPTY = {"[]": list, "{}": dict}


def _shape_problem(args: Any, kwargs: Any) -> str | None:
    """What is wrong with decoded arguments that could not be passed to a function, or None."""
    if not isinstance(args, list):
        return f"has args of type {type(args).__name__}, not a list"
    if not isinstance(kwargs, dict):
        return f"has kwargs of type {type(kwargs).__name__}, not an object"
    return None


def _loads(text: str) -> Any:
    """``json.loads``, without running the decoder for the common empty list and dict."""
    empty = _EMPTY.get(text)
    return empty() if empty is not None else json.loads(text)


def _rows(rows: list[Row]) -> list[Row]:
    return rows


def _applied(rows: list[Row]) -> bool:
    return bool(rows)


def _statement[T](name: str, read: Callable[[list[Row]], T], **params: Any) -> Statement[T]:
    return Statement(QUERIES[name], params, read)


def _by_id(rows: list[Row]) -> dict[str, Row]:
    return {str(row["id"]): row for row in rows}


def enqueue(jobs: Sequence[NewJob]) -> Statement[dict[str, Row]]:
    """Insert jobs; returns ``id -> {enqueued_at, run_after}`` of those inserted (not key-held)."""
    if len(jobs) == 1:
        [job] = jobs
        return _statement(
            "enqueue_one",
            _by_id,
            id=job.id,
            task_path=job.task_path,
            queue_name=job.task.queue_name,
            priority=job.task.priority,
            backend=job.task.backend,
            args=job.args_json,
            kwargs=job.kwargs_json,
            run_after=job.task.run_after,
            max_attempts=job.max_attempts,
            timeout=job.timeout_seconds,
            backoff=job.backoff_seconds,
            unique_key=job.unique_key,
        )
    return _statement(
        "enqueue",
        _by_id,
        ids=[job.id for job in jobs],
        task_paths=[job.task_path for job in jobs],
        queue_names=[job.task.queue_name for job in jobs],
        priorities=[job.task.priority for job in jobs],
        backends=[job.task.backend for job in jobs],
        args=[job.args_json for job in jobs],
        kwargs=[job.kwargs_json for job in jobs],
        run_afters=[job.task.run_after for job in jobs],
        max_attempts=[job.max_attempts for job in jobs],
        timeouts=[job.timeout_seconds for job in jobs],
        backoffs=[job.backoff_seconds for job in jobs],
        unique_keys=[job.unique_key for job in jobs],
    )


class JobCopy:
    """Bulk insert of jobs without unique keys with COPY, in the caller's transaction.

    COPY is several times faster than INSERT for large batches, and rows stream to the server
    while the caller keeps working (``write`` returns before the server has stored the row).
    ``now`` is the database time stamped as every row's ``enqueued_at``.
    """

    def __init__(self, using: str = "default") -> None:
        self._using = using

    def __enter__(self) -> "JobCopy":
        self._cursor = connections[self._using].cursor()
        self._cursor.execute(QUERIES["database_now"].sql)
        self.now: datetime = self._cursor.fetchone()[0]
        self._copy_context = self._cursor.cursor.copy(QUERIES["copy_jobs"].sql)
        self._write_row = self._copy_context.__enter__().write_row
        return self

    def write(self, job: NewJob) -> None:
        task = job.task
        now = self.now
        self._write_row(
            (
                job.id,
                job.task_path,
                task.queue_name,
                task.priority,
                task.backend,
                job.args_json,
                job.kwargs_json,
                task.run_after or now,
                now,
                job.max_attempts,
                job.timeout_seconds,
                job.backoff_seconds,
            )
        )

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._copy_context.__exit__(*exc_info)
        finally:
            self._cursor.close()


def _claimed(rows: list[Row]) -> list[ClaimedJob]:
    return [ClaimedJob.from_row(row) for row in rows]


def claim_by_ids(
    ids: Sequence[UUID], *, worker_id: str, lease_seconds: float
) -> Statement[list[ClaimedJob]]:
    return _statement(
        "claim_by_ids", _claimed, ids=list(ids), worker_id=worker_id, lease_seconds=lease_seconds
    )


def claim_batch(
    queues: Sequence[str] | None, limit: int, *, worker_id: str, lease_seconds: float
) -> Statement[list[ClaimedJob]]:
    return _statement(
        "claim_batch",
        _claimed,
        queues=None if queues is None else list(queues),
        limit=limit,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
    )


def _heartbeat_reply(rows: list[Row]) -> HeartbeatReply:
    return HeartbeatReply(
        held=frozenset(row["id"] for row in rows),
        renewed=frozenset(row["id"] for row in rows if row["renewed"]),
        cancel_requested=frozenset(row["id"] for row in rows if row["cancel_requested"]),
    )


def heartbeat(leases: Iterable[Lease], *, lease_seconds: float) -> Statement[HeartbeatReply]:
    # In id order, as complete_many: two statements locking the same rows in one order cannot
    # deadlock each other.
    leases = sorted(leases, key=_by_job_id)
    return _statement(
        "heartbeat",
        _heartbeat_reply,
        ids=[lease.job_id for lease in leases],
        versions=[lease.lease_version for lease in leases],
        lease_seconds=lease_seconds,
    )


def complete(lease: Lease, result: Any) -> Statement[bool]:
    """Fenced success; ``result`` must be JSON (``jsonargs.dumps`` raises TypeError otherwise)."""
    return _statement(
        "complete",
        _applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        result=jsonargs.dumps(result),
    )


def _applied_ids(rows: list[Row]) -> set[UUID]:
    return {row["id"] for row in rows}


def _by_job_id(lease: Lease) -> UUID:
    return lease.job_id


def complete_many(outcomes: Sequence[tuple[Lease, str]]) -> Statement[set[UUID]]:
    """Fenced success of many jobs at once; results already JSON-encoded. Returns applied ids."""
    outcomes = sorted(outcomes, key=lambda outcome: outcome[0].job_id)  # as heartbeat
    return _statement(
        "complete_many",
        _applied_ids,
        ids=[lease.job_id for lease, _ in outcomes],
        versions=[lease.lease_version for lease, _ in outcomes],
        results=[result_json for _, result_json in outcomes],
    )


def _fail_outcome(rows: list[Row]) -> FailOutcome | None:
    return FailOutcome(rows[0]["status"], rows[0]["run_after"]) if rows else None


def fail(
    lease: Lease,
    *,
    exception_class_path: str,
    message: str,
    traceback: str,
    retryable: bool,
    backoff_cap_seconds: float,
) -> Statement[FailOutcome | None]:
    """Fenced failure of one attempt; None when the lease was lost."""
    error = {
        "exception_class_path": exception_class_path,
        "message": message,
        "traceback": traceback,
    }
    return _statement(
        "fail",
        _fail_outcome,
        id=lease.job_id,
        lease_version=lease.lease_version,
        error=jsonargs.dumps(error),
        retryable=retryable,
        backoff_cap_seconds=backoff_cap_seconds,
    )


def release(lease: Lease) -> Statement[bool]:
    return _statement("release", _applied, id=lease.job_id, lease_version=lease.lease_version)


def finish_cancelled(lease: Lease) -> Statement[bool]:
    return _statement(
        "finish_cancelled", _applied, id=lease.job_id, lease_version=lease.lease_version
    )


def progress(lease: Lease, current: float, total: float | None, message: str) -> Statement[bool]:
    return _statement(
        "progress",
        _applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        current=current,
        total=total,
        message=message,
    )


def checkpoint(lease: Lease, data: Any) -> Statement[bool]:
    return _statement(
        "checkpoint",
        _applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        checkpoint=jsonargs.dumps(data),
    )


def lock_lease(lease: Lease) -> Statement[bool]:
    return _statement("lock_lease", _applied, id=lease.job_id, lease_version=lease.lease_version)


def job_results(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Rows to build TaskResults from (``results.result_from_row``); jsonb comes back as text."""
    return _statement("job_results", _rows, ids=list(ids))


def unfinished_by_unique_key(unique_keys: Sequence[str]) -> Statement[dict[str, Row]]:
    """``unique_key -> row`` (as ``job_results``) of the unfinished jobs holding these keys."""
    return _statement(
        "unfinished_by_unique_key",
        _by_unique_key,
        unique_keys=list(unique_keys),
    )


def _by_unique_key(rows: list[Row]) -> dict[str, Row]:
    return {row.pop("unique_key"): row for row in rows}


def job_statuses(ids: Sequence[UUID]) -> Statement[dict[UUID, Row]]:
    """``id -> {status, key_held}`` of these jobs now; a deleted job is missing."""
    return _statement("job_statuses", _rows_by_id, ids=list(ids))


def _rows_by_id(rows: list[Row]) -> dict[UUID, Row]:
    return {row.pop("id"): row for row in rows}


def job_progress(job_id: UUID) -> Statement[Row | None]:
    """``{id, status, progress, attempt}`` of one job (progress as JSON text), or None."""
    return _statement("job_progress", _first_or_none, id=job_id)


def _first_or_none(rows: list[Row]) -> Row | None:
    return rows[0] if rows else None


def cancel(ids: Sequence[UUID]) -> Statement[dict[UUID, CancelOutcome]]:
    """Returns what happened to each changed job: cancelled, or (running) cancel requested."""
    return _statement("cancel", _cancel_outcomes, ids=list(ids))


def _cancel_outcomes(rows: list[Row]) -> dict[UUID, CancelOutcome]:
    return {
        row["id"]: CancelOutcome.CANCELLED
        if row["status"] == JobStatus.CANCELLED
        else CancelOutcome.CANCEL_REQUESTED
        for row in rows
    }


def retry(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Queue failed/cancelled jobs again; returns ``{id, queue_name, backend}`` of those queued."""
    return _statement("retry", _rows, ids=list(ids))


def force_release(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Operator release of running jobs, unfenced; returns ``{id, status, queue_name, backend}``.

    The lease version is bumped, so the worker that held the lease can no longer write the job.
    """
    return _statement("force_release", _rows, ids=list(ids))


def delete_jobs(ids: Sequence[UUID]) -> Statement[set[UUID]]:
    """Delete the given jobs that are not running; returns the ids deleted."""
    return _statement("delete_jobs", _applied_ids, ids=list(ids))


def queue_summary() -> Statement[list[Row]]:
    """Per queue: queued, running, retrying, failed, oldest_due_age, finished_last_minute."""
    return _statement("queue_summary", _rows)


def _column(rows: list[Row]) -> list[Any]:
    return [next(iter(row.values())) for row in rows]


def task_paths(*, limit: int) -> Statement[list[str]]:
    return _statement("task_paths", _column, limit=limit)


def limit_statement_time(*, milliseconds: int) -> Statement[list[Row]]:
    """Only inside a transaction: the limit ends with it (``SET LOCAL``)."""
    return _statement("limit_statement_time", _rows, milliseconds=milliseconds)


def prune_finished(
    *, statuses: Sequence[str], older_than_seconds: float, limit: int
) -> Statement[int]:
    """Delete one batch of old finished jobs; returns how many went."""
    return _statement(
        "prune_finished",
        len,
        statuses=list(statuses),
        older_than_seconds=older_than_seconds,
        limit=limit,
    )


def cancelled_now(outcomes: dict[UUID, CancelOutcome]) -> dict[UUID, str]:
    """The jobs a ``cancel`` ended at once, with their status (running ones only had
    cancellation requested)."""
    return {
        job_id: JobStatus.CANCELLED
        for job_id, outcome in outcomes.items()
        if outcome == CancelOutcome.CANCELLED
    }


def _swept(rows: list[Row]) -> list[SweptJob]:
    return [SweptJob(**row) for row in rows]


def due_by_queue() -> Statement[dict[str, int]]:
    """``queue_name -> number of due, unclaimed jobs``."""
    return _statement("due_by_queue", _due_counts)


def _due_counts(rows: list[Row]) -> dict[str, int]:
    return {row["queue_name"]: row["due"] for row in rows}


def expire_worker_leases(worker_id: str) -> Statement[set[UUID]]:
    """End the leases of a worker known to be dead (bumping their versions); returns the ids."""
    return _statement("expire_worker_leases", _applied_ids, worker_id=worker_id)


def recover_expired(*, limit: int, backoff_cap_seconds: float) -> Statement[list[SweptJob]]:
    return _statement(
        "recover_expired", _swept, limit=limit, backoff_cap_seconds=backoff_cap_seconds
    )


def stale_due_jobs(*, older_than_seconds: float, limit: int) -> Statement[list[Row]]:
    return _statement("stale_due_jobs", _rows, older_than_seconds=older_than_seconds, limit=limit)


def execute[T](statement: Statement[T], using: str = "default") -> T:
    """Run on Django's connection ``using``: inside the caller's transaction if one is open."""
    with connections[using].cursor() as cursor:
        cursor.execute(statement.query.sql, statement.params)
        rows = cursor.fetchall() if cursor.description else []
        return statement.read(_as_dicts(cursor.description, rows))


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
        # A named query's columns never change: read their names once, not per round trip.
        names = _COLUMN_NAMES.get(statement.query.name)
        if names is None:
            names = _COLUMN_NAMES[statement.query.name] = [c.name for c in cursor.description]
        return statement.read([dict(zip(names, row, strict=True)) for row in rows])


_COLUMN_NAMES: dict[str, list[str]] = {}


def _as_dicts(description: Any, rows: list[tuple]) -> list[Row]:
    if not description:
        return []
    names = [column.name for column in description]
    return [dict(zip(names, row, strict=True)) for row in rows]
