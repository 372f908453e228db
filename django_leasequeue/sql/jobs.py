"""A job's life under its lease (``jobs.sql``): enqueue, claim, heartbeat, the lease holder's
writes, and the recover sweep. Worker writes are fenced by ``Lease``: a fenced step returns False
(or None) when the lease was lost, and nothing was written."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

from django_leasequeue import jsonargs
from django_leasequeue.sql.readers import applied, applied_ids, by_id, rows
from django_leasequeue.sql.records import (
    NO_LIMITS,
    ClaimedJob,
    ClaimPosition,
    CompletedSteps,
    DueJob,
    HeartbeatReply,
    Lease,
    NewJob,
    NextRun,
    SweptJob,
)
from django_leasequeue.sql.statement import Row, Statement, statement


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
                return statement("enqueue_plain_cached", partial(_inserted_as, job.id), **columns)
            return statement("enqueue_plain", by_id, **columns)
        held_to = job.limits or NO_LIMITS
        return statement(
            "enqueue_one",
            by_id,
            **columns,
            unique_key=job.unique_key,
            unique_for=job.unique_for,
            limits=held_to.limits,
            flow_key=held_to.flow_key,
            concurrency_key=held_to.concurrency_key,
            pending_key=held_to.pending_key,
        )
    limits = [job.limits or NO_LIMITS for job in jobs]
    return statement(
        "enqueue",
        by_id,
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
        limits=[columns.limits for columns in limits],
        flow_keys=[columns.flow_key for columns in limits],
        concurrency_keys=[columns.concurrency_key for columns in limits],
        pending_keys=[columns.pending_key for columns in limits],
        expires_afters=[job.expires_after for job in jobs],
        unique_fors=[job.unique_for for job in jobs],
        metas=[job.meta_json for job in jobs],
    )


def _now(rows: list[Row]) -> datetime:
    return rows[0]["now"]


def database_now() -> Statement[datetime]:
    """The database's clock (its transaction time)."""
    return statement("database_now", _now)


def _claimed(rows: list[Row]) -> list[ClaimedJob]:
    return [ClaimedJob.from_row(row) for row in rows]


def claim_by_ids(
    ids: Sequence[UUID], *, worker_id: str, lease_seconds: float, flow_claim: bool = False
) -> Statement[list[ClaimedJob]]:
    """Claim these jobs if still claimable; jobs held to limits only when ``flow_claim`` (the
    flow claim, inside the transaction of ``flow_candidates``, with its locks held)."""
    return statement(
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
    return statement("jobs_present", applied_ids, ids=list(ids))


def claim_batch(
    queues: Sequence[str] | None,
    limit: int,
    *,
    worker_id: str,
    lease_seconds: float,
    with_expiring: bool = True,
    after: ClaimPosition | None = None,
) -> Statement[list[ClaimedJob]]:
    """The poll claim in priority order; jobs with an expiry only ``with_expiring`` (a dearer
    plan: workers ask for them while their sweep sees one waiting). Without them, the claim
    of every queue or of one runs on a cached plan (``claim_batch``), which may start
    ``after`` a position (``claim_batch_starts_after``; None: from the head)."""
    queues = None if queues is None else list(queues)
    claim = {"limit": limit, "worker_id": worker_id, "lease_seconds": lease_seconds}
    if not claim_batch_starts_after(queues, with_expiring=with_expiring):
        if after is not None:
            raise ValueError("Only the poll of every queue or of one starts after a position.")
        if with_expiring:
            return statement("claim_batch_with_expiring", _claimed, queues=queues, **claim)
        return statement("claim_batch_of_queues", _claimed, queues=queues, **claim)
    return statement(
        "claim_batch",
        _claimed,
        queue=queues[0] if queues else None,
        after_priority=None if after is None else after.priority,
        after_run_after=None if after is None else after.run_after,
        after_id=None if after is None else after.id,
        **claim,
    )


def claim_batch_starts_after(queues: Sequence[str] | None, *, with_expiring: bool) -> bool:
    """Whether ``claim_batch`` of these queues may start after a position: its claim of every
    queue or of one, without jobs with an expiry. The others always read from the head."""
    return not with_expiring and (queues is None or len(set(queues)) == 1)


def claim_batch_by_queue(
    open_queues: Sequence[str], limit: int, *, worker_id: str, lease_seconds: float
) -> Statement[list[ClaimedJob]]:
    """``claim_batch`` while a queue is paused: from the heads of these open queues."""
    return statement(
        "claim_batch_by_queue",
        _claimed,
        queues=list(open_queues),
        limit=limit,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
    )


def _due_job(rows: list[Row]) -> DueJob | None:
    return DueJob(rows[0]["id"], rows[0]["run_after"]) if rows else None


def oldest_due_job(
    queues: Sequence[str] | None, *, not_before: datetime | None = None
) -> Statement[DueJob | None]:
    """The fairness probe; jobs without an expiry only from ``not_before`` on (``None``: from
    the head of the claim index)."""
    return statement(
        "oldest_due_job",
        _due_job,
        queues=None if queues is None else list(queues),
        not_before=not_before,
    )


def oldest_due_job_by_queue(open_queues: Sequence[str]) -> Statement[DueJob | None]:
    """``oldest_due_job`` while a queue is paused: over these open queues only."""
    return statement("oldest_due_job_by_queue", _due_job, queues=list(open_queues))


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
    return statement(
        "heartbeat",
        _heartbeat_reply,
        ids=[lease.job_id for lease in leases],
        versions=[lease.lease_version for lease in leases],
        lease_seconds=lease_seconds,
    )


def complete(lease: Lease, result: Any) -> Statement[bool]:
    """Fenced success; raises ``UnstorableValue`` when ``result`` cannot be stored."""
    return statement(
        "complete",
        applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        result=jsonargs.encode(result, "return value"),
    )


def _by_job_id(lease: Lease) -> UUID:
    return lease.job_id


def complete_many(outcomes: Sequence[tuple[Lease, str]]) -> Statement[set[UUID]]:
    """Fenced success of many jobs at once; results already JSON-encoded. Returns applied ids."""
    return statement("complete_many", applied_ids, **_completions(outcomes))


def _completions(outcomes: Sequence[tuple[Lease, str]]) -> dict[str, list[Any]]:
    """The parameters of a batch of fenced successes, in job id order (as heartbeat)."""
    outcomes = sorted(outcomes, key=lambda outcome: outcome[0].job_id)
    return {
        "ids": [lease.job_id for lease, _ in outcomes],
        "versions": [lease.lease_version for lease, _ in outcomes],
        "results": [result_json for _, result_json in outcomes],
    }


def _completed_steps(rows: list[Row]) -> CompletedSteps:
    row = rows[0]
    released = zip(row["released_queues"] or (), row["released"] or (), strict=True)
    return CompletedSteps(set(row["completed"]), [(queue, str(id_)) for queue, id_ in released])


def complete_steps(outcomes: Sequence[tuple[Lease, str]]) -> Statement[CompletedSteps]:
    """``complete_many`` of workflow steps: their workflows' books are kept once for the batch
    rather than once per row by the step trigger, and the children they released come back."""
    return statement("complete_steps", _completed_steps, **_completions(outcomes))


def _next_run(rows: list[Row]) -> NextRun | None:
    if not rows:
        return None
    return NextRun(rows[0]["status"], rows[0]["run_after"], rows[0]["expires_at"])


def fail(
    lease: Lease,
    *,
    exception_class_path: str,
    message: str,
    traceback: str,
    retryable: bool,
    backoff_cap_seconds: float,
) -> Statement[NextRun | None]:
    """Fenced failure of one attempt; None when the lease was lost."""
    error = {
        "exception_class_path": exception_class_path,
        "message": message,
        "traceback": traceback,
    }
    return statement(
        "fail",
        _next_run,
        id=lease.job_id,
        lease_version=lease.lease_version,
        error=jsonargs.dumps(error),
        retryable=retryable,
        backoff_cap_seconds=backoff_cap_seconds,
    )


def hand_back(lease: Lease) -> Statement[bool]:
    """Fenced: the worker gives a job back untouched at shutdown (an operator's forced release
    is ``force_release``)."""
    return statement("hand_back", applied, id=lease.job_id, lease_version=lease.lease_version)


def finish_cancelled(lease: Lease) -> Statement[bool]:
    return statement(
        "finish_cancelled", applied, id=lease.job_id, lease_version=lease.lease_version
    )


def progress(lease: Lease, current: float, total: float | None, message: str) -> Statement[bool]:
    return statement(
        "progress",
        applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        current=current,
        total=total,
        message=message,
    )


def checkpoint(lease: Lease, data_json: str) -> Statement[bool]:
    """Fenced save of a checkpoint, already encoded (``jsonargs.encode``)."""
    return statement(
        "checkpoint",
        applied,
        id=lease.job_id,
        lease_version=lease.lease_version,
        checkpoint=data_json,
    )


def lock_lease(lease: Lease) -> Statement[bool]:
    return statement("lock_lease", applied, id=lease.job_id, lease_version=lease.lease_version)


def expire_worker_leases(worker_id: str) -> Statement[set[UUID]]:
    """End the leases of a worker known to be dead (bumping their versions); returns the ids."""
    return statement("expire_worker_leases", applied_ids, worker_id=worker_id)


def _swept(rows: list[Row]) -> list[SweptJob]:
    return [SweptJob(**row) for row in rows]


def recover_expired(*, limit: int, backoff_cap_seconds: float) -> Statement[list[SweptJob]]:
    return statement(
        "recover_expired", _swept, limit=limit, backoff_cap_seconds=backoff_cap_seconds
    )


def expiring_jobs_waiting() -> Statement[bool]:
    return statement("expiring_jobs_waiting", lambda rows: bool(rows[0]["waiting"]))


def stale_due_jobs(*, older_than_seconds: float, limit: int) -> Statement[list[Row]]:
    return statement("stale_due_jobs", rows, older_than_seconds=older_than_seconds, limit=limit)


def stale_due_jobs_by_queue(
    open_queues: Sequence[str], *, older_than_seconds: float, limit: int
) -> Statement[list[Row]]:
    """``stale_due_jobs`` while a queue is paused: over these open queues only."""
    return statement(
        "stale_due_jobs_by_queue",
        rows,
        queues=list(open_queues),
        older_than_seconds=older_than_seconds,
        limit=limit,
    )
