"""The lease protocol: every step of a job's life as a named SQL statement, sync and async.

A step is built as a ``Statement`` (query from ``queries.sql``, parameters, and how to read the
rows back) and run with ``execute`` on Django's connection (joining the caller's transaction) or
``aexecute`` on the worker's psycopg ``AsyncConnection``. Worker writes are fenced by ``Lease``:
a fenced step returns False (or None) when the lease was lost, and nothing was written.
"""

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, NamedTuple
from uuid import UUID

import psycopg
from django.db import connections

from django_leasequeue import jsonargs
from django_leasequeue.choices import CancelOutcome, JobStatus
from django_leasequeue.flow.limits import JobLimits
from django_leasequeue.sql import QUERIES, Query
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


# A unique key is its task's: (task path, key). Two tasks may use the same key apart.
type TaskKey = tuple[str, str]


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
    limits: JobLimits | None
    # Seconds from the first run_after after which it never starts (``expires_after``).
    expires_after: float | None = None
    # Seconds from the enqueue for which its unique key is held whatever its status.
    unique_for: float | None = None
    # The job's metadata: ``.using(meta=...)``, then what ``before_enqueue`` hooks add to it
    # (a dict of its own per job), and its JSON once checked (``jsonargs.encode``).
    meta: dict[str, Any] | None = None
    meta_json: str = "{}"

    @property
    def queue_name(self) -> str:
        return self.task.queue_name

    @property
    def task_key(self) -> TaskKey | None:
        """The unique key as its task holds it, or None without one."""
        return None if self.unique_key is None else (self.task_path, self.unique_key)

    def expires_at(self, run_after: datetime) -> datetime | None:
        """When it expires if it is first due at ``run_after`` (None: never)."""
        if self.expires_after is None:
            return None
        return run_after + timedelta(seconds=self.expires_after)


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
    # When this attempt was due (the queue latency runs from here to last_attempted_at).
    run_after: datetime
    # Workflow steps: the workflow, what the step receives of its upstream steps' results
    # (Upstream, or None), and whether any step waits for this one.
    workflow_id: UUID | None = None
    upstream: str | None = None
    has_dependents: bool = False
    # Why the row could not be decoded (the job is then failed, never run), or None.
    problem: str | None = None
    # What the enqueue stored with the job (``.using(meta=...)``, hooks, the trace context).
    meta: dict[str, Any] = field(default_factory=dict)

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
        if problem is None and not isinstance(decoded.get("meta", {}), dict):
            problem = f"has meta of type {type(decoded['meta']).__name__}, not an object"
        if problem is None:
            return cls(
                lease=lease,
                args=decoded["args"],
                kwargs=decoded["kwargs"],
                checkpoint=decoded.get("checkpoint"),
                worker_ids=decoded["worker_ids"],
                errors=decoded["errors"],
                meta=decoded.get("meta") or {},
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
    """Where a failed attempt left its job: ``retrying`` (with its next run) or ``failed``;
    ``expires_at`` is the job's expiry (None without one)."""

    status: str
    run_after: datetime
    expires_at: datetime | None = None

    @property
    def doomed(self) -> bool:
        """Its next run would start at or past its expiry: it can only expire."""
        return (
            self.status in JobStatus.claimable()
            and self.expires_at is not None
            and self.run_after >= self.expires_at
        )


@dataclass(frozen=True, slots=True)
class SweptJob:
    id: UUID
    status: str
    queue_name: str
    task_path: str


_JSON_COLUMNS = ("args", "kwargs", "checkpoint", "worker_ids", "errors", "meta")
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


def _inserted_as(job_id: str, rows: list[Row]) -> dict[str, Row]:
    """enqueue_plain_cached's one row (its enqueued_at), under the id the caller gave the job."""
    return {job_id: rows[0]}


def enqueue(jobs: Sequence[NewJob], *, cached_plan: bool = False) -> Statement[dict[str, Row]]:
    """Insert jobs; returns ``id -> {enqueued_at, ...}`` of those inserted (not key-held).

    ``cached_plan``: insert a lone plain job through a function whose plan the session keeps
    (right for a connection that outlives the request; see ``backend.sessions_outlive_requests``).
    """
    if len(jobs) == 1:
        [job] = jobs
        columns = {
            "id": job.id,
            "task_path": job.task_path,
            "queue_name": job.task.queue_name,
            "priority": job.task.priority,
            "backend": job.task.backend,
            "args": job.args_json,
            "kwargs": job.kwargs_json,
            "run_after": job.task.run_after,
            "max_attempts": job.max_attempts,
            "timeout": job.timeout_seconds,
            "backoff": job.backoff_seconds,
            "expires_after": job.expires_after,
            "meta": job.meta_json,
        }
        if job.unique_key is None and job.limits is None and job.unique_for is None:
            if cached_plan:
                return _statement("enqueue_plain_cached", partial(_inserted_as, job.id), **columns)
            return _statement("enqueue_plain", _by_id, **columns)
        return _statement(
            "enqueue_one",
            _by_id,
            **columns,
            unique_key=job.unique_key,
            unique_for=job.unique_for,
            **limit_columns(job.limits),
        )
    limits = [limit_columns(job.limits) for job in jobs]
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
        limits=[columns["limits"] for columns in limits],
        flow_keys=[columns["flow_key"] for columns in limits],
        concurrency_keys=[columns["concurrency_key"] for columns in limits],
        pending_keys=[columns["pending_key"] for columns in limits],
        expires_afters=[job.expires_after for job in jobs],
        unique_fors=[job.unique_for for job in jobs],
        metas=[job.meta_json for job in jobs],
    )


_NO_LIMITS = dict.fromkeys(("limits", "flow_key", "concurrency_key", "pending_key"))


def limit_columns(limits: JobLimits | None) -> dict[str, str | None]:
    """The job row's flow-control columns for these limits (all None without)."""
    if limits is None:
        return _NO_LIMITS
    return {
        "limits": json.dumps(limits.limits) if limits.limits else None,
        "flow_key": limits.flow_key,
        "concurrency_key": limits.concurrency_key,
        "pending_key": limits.pending_key,
    }


class JobCopy:
    """Bulk insert of jobs without unique keys with COPY, in the caller's transaction.

    COPY is several times faster than INSERT for large batches, and rows stream to the server
    while the caller keeps working (``write`` returns before the server has stored the row).
    ``now`` is the database time stamped as every row's ``enqueued_at``.
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


def _now(rows: list[Row]) -> datetime:
    return rows[0]["now"]


def database_now() -> Statement[datetime]:
    """The database's clock (its transaction time)."""
    return _statement("database_now", _now)


def _claimed(rows: list[Row]) -> list[ClaimedJob]:
    return [ClaimedJob.from_row(row) for row in rows]


def claim_by_ids(
    ids: Sequence[UUID], *, worker_id: str, lease_seconds: float, flow_claim: bool = False
) -> Statement[list[ClaimedJob]]:
    """Claim these jobs if still claimable; jobs held to limits only when ``flow_claim`` (the
    flow claim, inside the transaction of ``flow_candidates``, with its locks held)."""
    return _statement(
        "claim_by_ids",
        _claimed,
        ids=list(ids),
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        flow_claim=flow_claim,
    )


def jobs_present(ids: Sequence[UUID]) -> Statement[set[UUID]]:
    """Which of these jobs have a row, whatever their status (the claimer asks about woken ids
    it could not claim, to tell another project's wakeups from jobs already taken)."""
    return _statement("jobs_present", _applied_ids, ids=list(ids))


def claim_batch(
    queues: Sequence[str] | None,
    limit: int,
    *,
    worker_id: str,
    lease_seconds: float,
    with_expiring: bool = True,
) -> Statement[list[ClaimedJob]]:
    """The poll claim in priority order; jobs with an expiry only ``with_expiring`` (a dearer
    plan: workers ask for them while their sweep sees one waiting). Without them, the claim
    of every queue or of one runs on a cached plan (``claim_batch``)."""
    queues = None if queues is None else list(queues)
    claim = {"limit": limit, "worker_id": worker_id, "lease_seconds": lease_seconds}
    if with_expiring:
        return _statement("claim_batch_with_expiring", _claimed, queues=queues, **claim)
    if queues is not None and len(set(queues)) != 1:  # none, or several
        return _statement("claim_batch_of_queues", _claimed, queues=queues, **claim)
    return _statement("claim_batch", _claimed, queue=queues[0] if queues else None, **claim)


def claim_batch_by_queue(
    open_queues: Sequence[str], limit: int, *, worker_id: str, lease_seconds: float
) -> Statement[list[ClaimedJob]]:
    """``claim_batch`` while a queue is paused: from the heads of these open queues."""
    return _statement(
        "claim_batch_by_queue",
        _claimed,
        queues=list(open_queues),
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
    """Fenced success; raises ``UnstorableValue`` when ``result`` cannot be stored."""
    return _statement(
        "complete",
        _applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        result=jsonargs.encode(result, "return value"),
    )


def _applied_ids(rows: list[Row]) -> set[Any]:  # job ids (UUID) or worker ids (str)
    return {row["id"] for row in rows}


def _by_job_id(lease: Lease) -> UUID:
    return lease.job_id


def complete_many(outcomes: Sequence[tuple[Lease, str]]) -> Statement[set[UUID]]:
    """Fenced success of many jobs at once; results already JSON-encoded. Returns applied ids."""
    return _statement("complete_many", _applied_ids, **_completions(outcomes))


def _completions(outcomes: Sequence[tuple[Lease, str]]) -> dict[str, list[Any]]:
    """The parameters of a batch of fenced successes, in job id order (as heartbeat)."""
    outcomes = sorted(outcomes, key=lambda outcome: outcome[0].job_id)
    return {
        "ids": [lease.job_id for lease, _ in outcomes],
        "versions": [lease.lease_version for lease, _ in outcomes],
        "results": [result_json for _, result_json in outcomes],
    }


class CompletedSteps(NamedTuple):
    applied: set[UUID]
    # The direct children their completion released, due now: (queue, job id), as Wakeups.push
    # takes them.
    released: list[tuple[str, str]]


def _completed_steps(rows: list[Row]) -> CompletedSteps:
    row = rows[0]
    released = zip(row["released_queues"] or (), row["released"] or (), strict=True)
    return CompletedSteps(set(row["completed"]), [(queue, str(id_)) for queue, id_ in released])


def complete_steps(outcomes: Sequence[tuple[Lease, str]]) -> Statement[CompletedSteps]:
    """``complete_many`` of workflow steps: their workflows' books are kept once for the batch
    rather than once per row by the step trigger, and the children they released come back."""
    return _statement("complete_steps", _completed_steps, **_completions(outcomes))


def _fail_outcome(rows: list[Row]) -> FailOutcome | None:
    if not rows:
        return None
    return FailOutcome(rows[0]["status"], rows[0]["run_after"], rows[0]["expires_at"])


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


def hand_back(lease: Lease) -> Statement[bool]:
    """Fenced: the worker gives a job back untouched at shutdown (an operator's forced release
    is ``force_release``)."""
    return _statement("hand_back", _applied, id=lease.job_id, lease_version=lease.lease_version)


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


def checkpoint(lease: Lease, data_json: str) -> Statement[bool]:
    """Fenced save of a checkpoint, already encoded (``jsonargs.encode``)."""
    return _statement(
        "checkpoint",
        _applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        checkpoint=data_json,
    )


def lock_lease(lease: Lease) -> Statement[bool]:
    return _statement("lock_lease", _applied, id=lease.job_id, lease_version=lease.lease_version)


def job_results(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Rows to build TaskResults from (``results.result_from_row``); jsonb comes back as text."""
    return _statement("job_results", _rows, ids=list(ids))


def unique_key_holders(keys: Sequence[TaskKey]) -> Statement[dict[TaskKey, Row]]:
    """``(task_path, unique_key) -> row`` (as ``job_results``) of the jobs holding these keys:
    unfinished, or within their ``unique_for`` period whatever their status."""
    return _statement(
        "unique_key_holders",
        _by_task_key,
        task_paths=[task_path for task_path, _ in keys],
        unique_keys=[key for _, key in keys],
    )


def _by_task_key(rows: list[Row]) -> dict[TaskKey, Row]:
    return {(row["task_path"], row.pop("unique_key")): row for row in rows}


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


# Counts up to this are exact (an index-only scan each); a larger one is estimated.
SUMMARY_EXACT_UP_TO = 2000
# The estimate: the pair's stretch of the status_queue index cut into this many slices of ids,
# and the first entries of each read (at most slices x per_slice index entries per count).
SUMMARY_SLICES = 64
SUMMARY_PER_SLICE = 32


def queue_summary(
    *,
    exact_up_to: int = SUMMARY_EXACT_UP_TO,
    slices: int = SUMMARY_SLICES,
    per_slice: int = SUMMARY_PER_SLICE,
) -> Statement[list[Row]]:
    """Per queue: queued, running, retrying, failed, ``estimated`` (which of those four are
    estimates: a list of statuses), oldest_due_age, finished_last_minute. Stays fast on any
    backlog (docs/admin.md): a huge count is estimated, and says so."""
    return _statement(
        "queue_summary",
        _rows,
        exact_up_to=exact_up_to,
        slices=slices,
        per_slice=per_slice,
    )


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


def prune_workflows(*, older_than_seconds: float, limit: int) -> Statement[int]:
    """Delete one batch of old finished workflows left without steps; returns how many went."""
    return _statement("prune_workflows", len, older_than_seconds=older_than_seconds, limit=limit)


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


def expiring_jobs_waiting() -> Statement[bool]:
    return _statement("expiring_jobs_waiting", lambda rows: bool(rows[0]["waiting"]))


def stale_due_jobs(*, older_than_seconds: float, limit: int) -> Statement[list[Row]]:
    return _statement("stale_due_jobs", _rows, older_than_seconds=older_than_seconds, limit=limit)


def stale_due_jobs_by_queue(
    open_queues: Sequence[str], *, older_than_seconds: float, limit: int
) -> Statement[list[Row]]:
    """``stale_due_jobs`` while a queue is paused: over these open queues only."""
    return _statement(
        "stale_due_jobs_by_queue",
        _rows,
        queues=list(open_queues),
        older_than_seconds=older_than_seconds,
        limit=limit,
    )


# Flow control


@dataclass(frozen=True, slots=True)
class FlowCandidate:
    """A due job held to limits, as the flow claim considers it."""

    id: UUID
    flow_key: str
    queue_name: str
    limits: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class FlowCandidates:
    """The heads of the flow partitions looked at, and which limit keys this claim has locked."""

    jobs: list[FlowCandidate]
    locked_keys: frozenset[str]


def _flow_candidates(rows: list[Row]) -> FlowCandidates:
    jobs = [
        FlowCandidate(row["id"], row["flow_key"], row["queue_name"], json.loads(row["limits"]))
        for row in rows
    ]
    return FlowCandidates(jobs, frozenset(rows[0]["locked_keys"]) if rows else frozenset())


def flow_candidates(
    queues: Sequence[str] | None, *, after: str, partitions: int, per_partition: int
) -> Statement[FlowCandidates]:
    """Only inside a transaction: the locks it takes are held until it ends."""
    return _statement(
        "flow_candidates",
        _flow_candidates,
        queues=None if queues is None else list(queues),
        after=after,
        partitions=partitions,
        per_partition=per_partition,
    )


@dataclass(frozen=True, slots=True)
class FlowUsage:
    """What limits use now: running jobs per concurrency key and per queue, each rate bucket's
    theoretical arrival time (None: never used), and the database's clock."""

    running: dict[str, int]
    queue_running: dict[str, int]
    tats: dict[str, datetime | None]
    now: datetime | None


def _flow_usage(rows: list[Row]) -> FlowUsage:
    usage = FlowUsage({}, {}, {}, rows[0]["now"] if rows else None)
    for row in rows:
        if row["kind"] == "concurrency":
            usage.running[row["key"]] = row["running"]
        elif row["kind"] == "queue":
            usage.queue_running[row["key"]] = row["running"]
        else:
            usage.tats[row["key"]] = row["tat"]
    return usage


def flow_usage(
    *, concurrency_keys: Iterable[str], queues: Iterable[str], rate_keys: Iterable[str]
) -> Statement[FlowUsage]:
    return _statement(
        "flow_usage",
        _flow_usage,
        concurrency_keys=sorted(concurrency_keys),
        queues=sorted(queues),
        rate_keys=sorted(rate_keys),
    )


def store_rate_buckets(tats: dict[str, datetime]) -> Statement[list[Row]]:
    """Only inside the transaction of ``flow_candidates``, with its locks held."""
    keys = sorted(tats)
    return _statement("store_rate_buckets", _rows, keys=keys, tats=[tats[key] for key in keys])


def oldest_due_job(queues: Sequence[str] | None) -> Statement[UUID | None]:
    return _statement(
        "oldest_due_job",
        _first_id,
        queues=None if queues is None else list(queues),
    )


def oldest_due_job_by_queue(open_queues: Sequence[str]) -> Statement[UUID | None]:
    """``oldest_due_job`` while a queue is paused: over these open queues only."""
    return _statement("oldest_due_job_by_queue", _first_id, queues=list(open_queues))


def _first_id(rows: list[Row]) -> UUID | None:
    return rows[0]["id"] if rows else None


def limit_lock_wait(*, milliseconds: int) -> Statement[list[Row]]:
    """Only inside a transaction: the limit ends with it (``SET LOCAL``)."""
    return _statement("limit_lock_wait", _rows, milliseconds=milliseconds)


def wait_for_flow_locks(keys: Iterable[str]) -> Statement[list[Row]]:
    """Only inside a transaction: waits for, then holds until it ends, each limit's lock."""
    return _statement("wait_for_flow_locks", _rows, keys=sorted(keys))


def lock_pending_keys(keys: Iterable[str]) -> Statement[list[Row]]:
    """Only inside a transaction: waits for, then holds until it ends, each key's enqueue lock."""
    return _statement("lock_pending_keys", _rows, keys=sorted(keys))


def pending_counts(
    keys: Iterable[str], queues: Iterable[str]
) -> Statement[dict[tuple[str, str], int]]:
    """Unfinished jobs per max_pending key, as ``("task", key)``, and per queue, as
    ``("queue", name)``."""
    return _statement("pending_counts", _pending_by_key, keys=sorted(keys), queues=sorted(queues))


def _pending_by_key(rows: list[Row]) -> dict[tuple[str, str], int]:
    return {(row["kind"], row["key"]): row["pending"] for row in rows}


def flow_overview(*, limit: int) -> Statement[list[Row]]:
    """The busiest flow partitions: ``{flow_key, running, waiting, limits}`` (limits as JSON)."""
    return _statement("flow_overview", _rows, limit=limit)


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


# The worker registry (``leasequeue_worker``; runtime/registry.py)


def worker_beat(
    *,
    worker_id: str,
    host: str,
    pid: int,
    queues: Sequence[str] | None,
    concurrency: int,
    lease_seconds: float,
    started_at: datetime,
    jobs_running: int,
    jobs_done: int,
) -> Statement[list[Row]]:
    return _statement(
        "worker_beat",
        _rows,
        id=worker_id,
        host=host,
        pid=pid,
        queues=None if queues is None else json.dumps(list(queues)),
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        started_at=started_at,
        jobs_running=jobs_running,
        jobs_done=jobs_done,
    )


def worker_stopped(worker_id: str, *, ending: str) -> Statement[bool]:
    """Mark a worker's row ended; False when it was already (or is not registered)."""
    return _statement("worker_stopped", _applied, id=worker_id, exit=ending)


def prune_workers(*, retention_seconds: float) -> Statement[set[str]]:
    return _statement("prune_workers", _applied_ids, retention_seconds=retention_seconds)


def workers() -> Statement[list[Row]]:
    """Every registered worker, alive first, with ``alive`` and ``heartbeat_age``."""
    return _statement("workers", _rows)


def workers_alive() -> Statement[int]:
    return _statement("workers_alive", _first_value)


def _first_value(rows: list[Row]) -> Any:
    return next(iter(rows[0].values()))


def count_prunable(*, statuses: Sequence[str], older_than_seconds: float) -> Statement[int]:
    return _statement(
        "count_prunable",
        _first_value,
        statuses=list(statuses),
        older_than_seconds=older_than_seconds,
    )


# Workflows (sql/workflows.sql)


def insert_workflow(workflow_id: str, name: str, backend: str, steps: int) -> Statement[Row]:
    """The workflow's row; returns ``{created_at}``."""
    return _statement(
        "insert_workflow", _first, id=workflow_id, workflow_name=name, backend=backend, steps=steps
    )


def _first(rows: list[Row]) -> Row:
    return rows[0]


def copy_rows(query_name: str, rows: Iterable[Sequence[Any]], database: str = "default") -> None:
    """COPY ``rows`` with the named ``COPY ... FROM STDIN`` statement, in the caller's
    transaction on Django's connection (rows stream while the caller builds the next ones)."""
    with (
        connections[database].cursor() as cursor,
        cursor.cursor.copy(QUERIES[query_name].sql) as copy,
    ):
        for row in rows:
            copy.write_row(row)


def upstream_results(job_id: UUID) -> Statement[list[Row]]:
    """``{step_name, result (JSON text), status}`` of a step's upstream steps, in order."""
    return _statement("upstream_results", _rows, id=job_id)


def released_steps(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """``{id, queue_name}`` of the queued steps downstream of these finished ones."""
    return _statement("released_steps", _rows, ids=list(ids))


def lock_running_steps(workflow_id: UUID | str) -> Statement[list[Row]]:
    return _statement("lock_running_steps", _rows, id=workflow_id)


def request_workflow_cancel(workflow_id: UUID | str) -> Statement[bool]:
    return _statement("request_workflow_cancel", _applied, id=workflow_id)


def cancel_workflow_steps(workflow_id: UUID | str) -> Statement[list[Row]]:
    """``{id, status}`` of the steps cancelled (status cancelled) or asked to stop (running)."""
    return _statement("cancel_workflow_steps", _rows, id=workflow_id)


def workflow_state(workflow_id: UUID) -> Statement[Row | None]:
    """A workflow's counters and its running steps' progress (JSON text), or None."""
    return _statement("workflow_state", _first_or_none, id=workflow_id)
