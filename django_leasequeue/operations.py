"""Operator actions on jobs: retry, cancel, release lease, delete.

Each action runs on the job database ``database`` (the backend's ``database`` option) as one
conditional statement of the protocol per batch of ids, so it is race-safe
with running workers: it changes only the jobs whose status allows it at that instant, and a
worker's fenced write that loses the race is dropped. The jobs an action skipped are explained
afterwards from the status they have now.
"""

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import batched
from uuid import UUID

from django.db import IntegrityError, transaction
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from django_leasequeue.choices import CancelOutcome, JobStatus
from django_leasequeue.progress_events import (
    publish_statuses_on_commit,
    publish_workflow_on_commit,
)
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql import workflows as workflows_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.statement import Row
from django_leasequeue.wakeups import wakeups_of_backend

# Ids per statement: keeps each statement's array parameter and row locks bounded.
BATCH_SIZE = 1000


@dataclass
class ActionReport:
    """What an action did: how many jobs it changed (by outcome) and why it skipped the others."""

    changed: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    changed_ids: set[UUID] = field(default_factory=set)

    @property
    def changed_count(self) -> int:
        return self.changed.total()

    @property
    def skipped_count(self) -> int:
        return self.skipped.total()

    def message(self) -> str:
        """E.g. "2 jobs retried; 1 skipped: still running"."""
        changed = +self.changed  # without outcomes that no job had
        if changed:
            parts = [
                ngettext("%(count)d job %(outcome)s", "%(count)d jobs %(outcome)s", count)
                % {"count": count, "outcome": outcome}
                for outcome, count in sorted(changed.items())
            ]
        else:
            parts = [_("no job changed")]
        text = ", ".join(parts)
        if self.skipped:
            reasons = sorted(self.skipped.items())
            if len(reasons) == 1:
                detail = reasons[0][0]
            else:
                detail = ", ".join(f"{reason} ({count})" for reason, count in reasons)
            text += _("; %(count)d skipped: %(detail)s") % {
                "count": self.skipped_count,
                "detail": detail,
            }
        return text


# Why a job in a given status now was left alone, per action.
_FINISHED: dict[str, Promise] = {
    JobStatus.SUCCEEDED: gettext_lazy("already succeeded"),
    JobStatus.FAILED: gettext_lazy("already failed"),
    JobStatus.CANCELLED: gettext_lazy("already cancelled"),
}
# The reason of a skipped job whose unique key an unfinished job holds, whatever its status.
_KEY_HELD = "key held"
_RETRY_SKIPS: dict[str, Promise] = {
    JobStatus.RUNNING: gettext_lazy("still running"),
    JobStatus.QUEUED: gettext_lazy("already waiting to run"),
    JobStatus.RETRYING: gettext_lazy("already waiting to run"),
    JobStatus.SUCCEEDED: gettext_lazy("already succeeded"),
    # Failed/cancelled yet untouched, and nobody holds its key: it ended after the retry
    # statement looked, which found it still running.
    JobStatus.FAILED: gettext_lazy("still running"),
    JobStatus.CANCELLED: gettext_lazy("still running"),
    _KEY_HELD: gettext_lazy("an unfinished job holds its unique key"),
}
_RELEASE_SKIPS: dict[str, Promise] = {
    JobStatus.QUEUED: gettext_lazy("not running"),
    JobStatus.RETRYING: gettext_lazy("not running"),
    **_FINISHED,
}
_DELETE_SKIPS: dict[str, Promise] = {
    JobStatus.RUNNING: gettext_lazy("running: cancel it or release its lease first"),
    JobStatus.WAITING: gettext_lazy("a waiting workflow step: cancel it first"),
    JobStatus.QUEUED: gettext_lazy("a workflow step not started: cancel it first"),
    JobStatus.RETRYING: gettext_lazy("a workflow step not finished: cancel it first"),
}
_GONE = gettext_lazy("no longer exists")


def _explain_skipped(
    report: ActionReport, ids: Iterable[UUID], reasons: Mapping[str, str | Promise], database: str
) -> None:
    """Count each skipped job under the reason its state now gives."""
    ids = list(ids)
    states = execute(reads_sql.job_statuses(ids), database)
    for job_id in ids:
        state = states.get(job_id)
        reason: str | Promise
        if state is None:
            reason = _GONE
        elif state["key_held"] and _KEY_HELD in reasons:
            reason = reasons[_KEY_HELD]
        else:
            reason = reasons.get(state["status"], state["status"])
        report.skipped[str(reason)] += 1


def _wake_on_commit(rows: Sequence[Row], database: str) -> None:
    """Wake workers for jobs that became claimable, through each job's own backend."""
    by_backend: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        by_backend.setdefault(row["backend"], []).append((row["queue_name"], str(row["id"])))
    for alias, jobs in by_backend.items():
        wakeups = wakeups_of_backend(alias)
        if wakeups is not None:
            transaction.on_commit(partial(wakeups.push, jobs), using=database)


def _run(
    ids: Iterable[UUID | str],
    apply: Callable[[list[UUID], str, ActionReport], set[UUID]],
    reasons: Mapping[str, str | Promise],
    database: str,
) -> ActionReport:
    """Apply an action batch by batch in one transaction, then explain what it skipped."""
    report = ActionReport()
    unique_ids = list(dict.fromkeys(UUID(str(job_id)) for job_id in ids))
    with transaction.atomic(using=database):
        for batch in batched(unique_ids, BATCH_SIZE):
            changed = apply(list(batch), database, report)
            report.changed_ids |= changed
            _explain_skipped(report, (i for i in batch if i not in changed), reasons, database)
    return report


def retry(ids: Iterable[UUID | str], database: str) -> ActionReport:
    """Failed/cancelled jobs → queued now, attempts reset, error history kept; workers woken."""

    def apply(batch: list[UUID], database: str, report: ActionReport) -> set[UUID]:
        rows = _retry_rows(batch, database)
        report.changed[_("retried")] += len(rows)
        _wake_on_commit(rows, database)
        publish_statuses_on_commit({row["id"]: JobStatus.QUEUED for row in rows}, database)
        return {row["id"] for row in rows}

    return _run(ids, apply, _RETRY_SKIPS, database)


def _retry_rows(batch: list[UUID], database: str) -> list[Row]:
    """The retry statement, surviving an enqueue that takes a unique key at the same moment.

    The statement skips jobs whose key a committed unfinished job holds; a holder committed
    while it ran makes the unique index refuse the whole batch. Then each job is retried on its
    own, and those whose key is taken are left (reported as skipped).
    """
    try:
        with transaction.atomic(using=database):
            return execute(operator_actions_sql.retry(batch), database)
    except IntegrityError:
        rows: list[Row] = []
        for job_id in batch:
            try:
                with transaction.atomic(using=database):
                    rows += execute(operator_actions_sql.retry([job_id]), database)
            except IntegrityError:
                continue
        return rows


def cancel_jobs(ids: Iterable[UUID | str], database: str) -> dict[UUID, CancelOutcome]:
    """The cancel statement, and open pages told of the jobs it ended, on commit.

    Returns what happened to each changed job: ``cancelled``, or ``cancel_requested`` for a
    running job whose worker was asked to stop (it ends cancelled at its next heartbeat).
    """
    outcomes = execute(operator_actions_sql.cancel([UUID(str(job_id)) for job_id in ids]), database)
    publish_statuses_on_commit(cancelled_now(outcomes), database)
    return outcomes


def cancelled_now(outcomes: dict[UUID, CancelOutcome]) -> dict[UUID, str]:
    """The jobs a ``cancel`` ended at once, with their status (running ones only had
    cancellation requested)."""
    return {
        job_id: JobStatus.CANCELLED
        for job_id, outcome in outcomes.items()
        if outcome == CancelOutcome.CANCELLED
    }


def cancel(ids: Iterable[UUID | str], database: str) -> ActionReport:
    """Queued/retrying jobs → cancelled; running ones get cancel_requested for their worker."""

    def apply(batch: list[UUID], database: str, report: ActionReport) -> set[UUID]:
        outcomes = cancel_jobs(batch, database)
        for outcome in outcomes.values():
            done = _("cancelled") if outcome == CancelOutcome.CANCELLED else _("asked to cancel")
            report.changed[done] += 1
        return set(outcomes)

    return _run(ids, apply, _FINISHED, database)


def release(ids: Iterable[UUID | str], database: str) -> ActionReport:
    """Running jobs (of a worker known dead) → retrying now; the old worker is fenced out."""

    def apply(batch: list[UUID], database: str, report: ActionReport) -> set[UUID]:
        rows = execute(operator_actions_sql.force_release(batch), database)
        for row in rows:
            released = row["status"] == JobStatus.RETRYING
            report.changed[_("released") if released else _("cancelled (cancel requested)")] += 1
        _wake_on_commit([row for row in rows if row["status"] == JobStatus.RETRYING], database)
        publish_statuses_on_commit({row["id"]: row["status"] for row in rows}, database)
        return {row["id"] for row in rows}

    return _run(ids, apply, _RELEASE_SKIPS, database)


def delete(ids: Iterable[UUID | str], database: str) -> ActionReport:
    """Delete jobs that no worker holds."""

    def apply(batch: list[UUID], database: str, report: ActionReport) -> set[UUID]:
        deleted = execute(operator_actions_sql.delete_jobs(batch), database)
        report.changed[_("deleted")] += len(deleted)
        return deleted

    return _run(ids, apply, _DELETE_SKIPS, database)


# Workflows


def cancel_workflow(workflow_id: UUID | str, database: str) -> dict[str, int]:
    """A workflow's steps not started → cancelled, running ones asked to stop; the workflow
    ends CANCELLED once they have. Returns ``{"cancelled": n, "cancel_requested": n}``."""
    with transaction.atomic(using=database):
        execute(workflows_sql.lock_running_steps(workflow_id), database)
        execute(workflows_sql.request_workflow_cancel(workflow_id), database)
        rows = execute(workflows_sql.cancel_workflow_steps(workflow_id), database)
    publish_workflow_on_commit(workflow_id, database)
    publish_statuses_on_commit(
        {row["id"]: row["status"] for row in rows if row["status"] == JobStatus.CANCELLED}, database
    )
    running = sum(row["status"] == JobStatus.RUNNING for row in rows)
    return {"cancelled": len(rows) - running, "cancel_requested": running}


def retry_failed_steps(workflow_id: UUID | str, database: str) -> ActionReport:
    """The workflow's failed steps queued again (and its cancel withdrawn); the steps they had
    cancelled wait for them again, and run if they succeed."""
    from django_leasequeue.models import Job, WorkflowRun

    with transaction.atomic(using=database):
        WorkflowRun.objects.using(database).filter(pk=workflow_id).update(cancel_requested=False)
        failed = Job.objects.using(database).filter(
            workflow_id=UUID(str(workflow_id)), status=JobStatus.FAILED
        )
        publish_workflow_on_commit(workflow_id, database)
        return retry(list(failed.values_list("id", flat=True)), database)
