"""The records the statements take and give: a job to enqueue (``NewJob``), a lease and the job
it claimed, and what the lease holder's writes, the sweep and the flow claim answer. Records of
one builder module's statements alone stay in it (``queue_control.py``, ``schedules.py``)."""

import json
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from uuid import UUID

from django_leasequeue.choices import JobStatus
from django_leasequeue.sql.job_columns import CLAIMED_JOB_COLUMNS
from django_leasequeue.sql.statement import Row
from django_leasequeue.tasks_framework import Task


@dataclass(frozen=True, slots=True)
class Lease:
    """The fencing token a claim hands out: only its holder may write the job."""

    job_id: UUID
    lease_version: int


# A unique key is its task's: (task path, key). Two tasks may use the same key apart.
type TaskKey = tuple[str, str]


class LimitColumns(NamedTuple):
    """The flow-control columns of a job held to limits, as its row stores them
    (``flow.limits.limit_columns`` makes them of the limits the job is held to)."""

    limits: str | None  # the limits, as JSON (None when only max_pending holds the job)
    flow_key: str | None
    concurrency_key: str | None
    pending_key: str | None


NO_LIMITS = LimitColumns(None, None, None, None)


class DueJob(NamedTuple):
    """A due job the fairness probe found, and the time it became due."""

    id: UUID
    run_after: datetime


class ClaimPosition(NamedTuple):
    """Where a job stands in claim order (priority, highest first, then run_after, then id):
    where a bounded poll claim starts (``runtime/poll_bound.py``)."""

    priority: int
    run_after: datetime
    id: UUID


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
    # The flow-control columns of its row (``flow.limits.limit_columns``), None without limits.
    limits: LimitColumns | None
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


_JSON_COLUMNS = ("args", "kwargs", "checkpoint", "worker_ids", "errors", "meta")
_EMPTY = {"[]": list, "{}": dict}


def _check_claimed_columns() -> None:
    """``from_row`` takes a claim's columns, ``CLAIMED_JOB_COLUMNS``: the lease's two, and the
    others as the fields of the same names (those of ``_JSON_COLUMNS`` decoded first)."""
    takes = {"id", "lease_version"} | {field.name for field in fields(ClaimedJob)}
    takes -= {"lease", "problem"}
    if takes != set(CLAIMED_JOB_COLUMNS) or not set(_JSON_COLUMNS) <= takes:
        raise TypeError(
            "ClaimedJob does not take the columns a claim returns (sql/job_columns.py): it "
            f"takes {sorted(takes)}; a claim returns {sorted(CLAIMED_JOB_COLUMNS)}."
        )


_check_claimed_columns()


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


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    """Which of the presented leases are still held, which of those were renewed (a row an
    operator holds locked is held but not renewed this time), and which should stop."""

    held: frozenset[UUID]
    renewed: frozenset[UUID]
    cancel_requested: frozenset[UUID]


@dataclass(frozen=True, slots=True)
class NextRun:
    """Where a failed or snoozed attempt left its job: ``retrying`` or ``queued`` with its next
    run, or ended (``failed``: no attempts or snoozes left; ``cancelled``: a cancel was
    requested); ``expires_at`` is the job's expiry (None without one)."""

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


class CompletedSteps(NamedTuple):
    applied: set[UUID]
    # The direct children their completion released, due now: (queue, job id), as Wakeups.push
    # takes them.
    released: list[tuple[str, str]]


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


@dataclass(frozen=True, slots=True)
class FlowUsage:
    """What limits use now: running jobs per concurrency key and per queue, each rate bucket's
    theoretical arrival time (None: never used), and the database's clock."""

    running: dict[str, int]
    queue_running: dict[str, int]
    tats: dict[str, datetime | None]
    now: datetime | None
