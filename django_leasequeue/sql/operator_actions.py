"""Operators' actions on jobs (``operator_actions.sql``): cancel, retry, force release, delete, and
``prunejobs``' deletes."""

from collections.abc import Sequence
from uuid import UUID

from django_leasequeue.choices import CancelOutcome, JobStatus
from django_leasequeue.sql.readers import applied_ids, first_value, rows
from django_leasequeue.sql.statement import Row, Statement, statement


def cancel(ids: Sequence[UUID]) -> Statement[dict[UUID, CancelOutcome]]:
    """Returns what happened to each changed job: cancelled, or (running) cancel requested."""
    return statement("cancel", _cancel_outcomes, ids=list(ids))


def _cancel_outcomes(rows: list[Row]) -> dict[UUID, CancelOutcome]:
    return {
        row["id"]: CancelOutcome.CANCELLED
        if row["status"] == JobStatus.CANCELLED
        else CancelOutcome.CANCEL_REQUESTED
        for row in rows
    }


def retry(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Queue failed/cancelled jobs again; returns ``{id, queue_name, backend}`` of those queued."""
    return statement("retry", rows, ids=list(ids))


def force_release(ids: Sequence[UUID]) -> Statement[list[Row]]:
    """Operator release of running jobs, unfenced; returns ``{id, status, queue_name, backend}``.

    The lease version is bumped, so the worker that held the lease can no longer write the job.
    """
    return statement("force_release", rows, ids=list(ids))


def delete_jobs(ids: Sequence[UUID]) -> Statement[set[UUID]]:
    """Delete the given jobs that are not running; returns the ids deleted."""
    return statement("delete_jobs", applied_ids, ids=list(ids))


def prune_finished(
    *, statuses: Sequence[str], older_than_seconds: float, limit: int
) -> Statement[int]:
    """Delete one batch of old finished jobs; returns how many went."""
    return statement(
        "prune_finished",
        len,
        statuses=list(statuses),
        older_than_seconds=older_than_seconds,
        limit=limit,
    )


def prune_workflows(*, older_than_seconds: float, limit: int) -> Statement[int]:
    """Delete one batch of old finished workflows left without steps; returns how many went."""
    return statement("prune_workflows", len, older_than_seconds=older_than_seconds, limit=limit)


def count_prunable(*, statuses: Sequence[str], older_than_seconds: float) -> Statement[int]:
    return statement(
        "count_prunable",
        first_value,
        statuses=list(statuses),
        older_than_seconds=older_than_seconds,
    )
