"""Operator actions of the job admin: what each one is, the bulk-action runner of the list, the
confirmation page and the report of what an action changed and skipped.

Every action runs through ``operations`` (one conditional statement per batch), on the job
database, so it is safe while workers run.
"""

from collections.abc import Callable
from dataclasses import dataclass
from itertools import batched
from typing import Any
from uuid import UUID

from django.contrib import admin, messages
from django.contrib.admin import ModelAdmin, helpers
from django.contrib.admin.models import CHANGE, LogEntry
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from django_leasequeue import operations
from django_leasequeue.admin import display
from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import job_database
from django_leasequeue.models import Job

# Most jobs one action touches; "select all" on a million-row filter stops here.
MAX_ACTION_JOBS = 10_000
# Jobs listed by name on a confirmation page.
CONFIRMATION_PREVIEW = 20


@dataclass(frozen=True, slots=True)
class JobAction:
    """An operator action: its wording, what it runs, which jobs it can apply to, what it needs."""

    name: str
    label: str | Promise  # lazily translated
    # Called with the job ids and the job database.
    run: Callable[[list[UUID], str], operations.ActionReport]
    applies_to: list[str]
    permission: str = "change"
    # Shown on the confirmation page; None runs the action without asking.
    confirm: str | Promise | None = None

    def allowed(self, model_admin: admin.ModelAdmin, request: HttpRequest, obj: Any) -> bool:
        check = getattr(model_admin, f"has_{self.permission}_permission")
        return check(request, obj)


ACTIONS = {
    action.name: action
    for action in [
        JobAction(
            "retry",
            _("Retry"),
            operations.retry,
            applies_to=[JobStatus.FAILED, JobStatus.CANCELLED],
        ),
        JobAction(
            "cancel",
            _("Cancel"),
            operations.cancel,
            applies_to=JobStatus.unfinished(),
            confirm=_(
                "Queued and retrying jobs are cancelled at once. Running jobs are asked to stop: "
                "their worker sees the request at its next heartbeat and ends them cancelled."
            ),
        ),
        JobAction(
            "release",
            _("Release lease"),
            operations.release,
            applies_to=[JobStatus.RUNNING],
            confirm=_(
                "Only for a worker known to be dead or stuck. The job is taken from its worker "
                "and queued again now (the attempt is not counted); if that worker is in fact "
                "alive, it is fenced out and its result is discarded, but side effects it already "
                "had happen again on the next run."
            ),
        ),
        JobAction(
            "delete",
            _("Delete"),
            operations.delete,
            applies_to=[*JobStatus.claimable(), *JobStatus.terminal()],
            permission="delete",
            confirm=_(
                "The jobs and their results and error history are deleted for good. Running "
                "jobs are skipped: cancel them or release their lease first."
            ),
        ),
    ]
}


def run_action(
    model_admin: ModelAdmin, request: HttpRequest, action: JobAction, ids: list[UUID]
) -> None:
    """Run ``action`` on these jobs and tell the operator what it did."""
    report_outcome(model_admin, request, action, action.run(ids, job_database()))


def bulk_action(action: JobAction) -> Callable:
    """A changelist action running ``action``, after a confirmation page when it asks for one."""

    def run(model_admin: ModelAdmin, request: HttpRequest, queryset: QuerySet) -> Any:
        ids = list(queryset.values_list("pk", flat=True)[: MAX_ACTION_JOBS + 1])
        capped = len(ids) > MAX_ACTION_JOBS
        ids = ids[:MAX_ACTION_JOBS]
        if action.confirm and request.POST.get("post") != "yes":
            return confirmation_page(model_admin, request, action, ids, bulk=True, capped=capped)
        run_action(model_admin, request, action, ids)
        if capped:
            model_admin.message_user(
                request,
                _("Only the first %(max)d selected jobs were processed; run it again for the rest.")
                % {"max": MAX_ACTION_JOBS},
                messages.WARNING,
            )
        return None

    run.__name__ = f"{action.name}_jobs"
    # Lazy, so that the label is translated per request, in the operator's language.
    description = format_lazy(_("{label} selected jobs"), label=action.label)
    return admin.action(permissions=[action.permission], description=description)(run)


def confirmation_page(
    model_admin: ModelAdmin,
    request: HttpRequest,
    action: JobAction,
    ids: list[UUID],
    *,
    bulk: bool,
    capped: bool = False,
) -> TemplateResponse:
    jobs = Job.objects.using(job_database())
    preview = (
        jobs.filter(pk__in=ids[:CONFIRMATION_PREVIEW]).only("task_path", "status").order_by("-id")
    )
    by_status = dict(
        jobs.filter(pk__in=ids)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": format_lazy(_("{label}: are you sure?"), label=action.label),
        "opts": model_admin.opts,
        "action": action,
        "bulk": bulk,
        "ids": ids,
        "count": len(ids),
        "capped": capped,
        "max_jobs": MAX_ACTION_JOBS,
        "preview": [(job, display.status_badge(job.status)) for job in preview],
        "will_apply": sum(n for status, n in by_status.items() if status in action.applies_to),
        "select_across": request.POST.get("select_across") == "1",
        # Django acts only when some box is ticked, even for "select all" (select_across).
        "selected_ids": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME) if bulk else [],
        "media": model_admin.media,
    }
    return TemplateResponse(request, "admin/leasequeue/job/action_confirmation.html", context)


def run_action_in_batches(
    model_admin: ModelAdmin, request: HttpRequest, action: JobAction, ids: list[UUID]
) -> None:
    """Run ``action`` on any number of jobs (a failure group's), one transaction per batch of
    ``operations.BATCH_SIZE``, so that no statement holds the locks of them all; each batch's
    changes recorded in history as it commits, then one message for the whole."""
    total = operations.ActionReport()
    for batch in batched(ids, operations.BATCH_SIZE):
        report = action.run(list(batch), job_database())
        record_history(request, action, report)
        total.changed += report.changed
        total.skipped += report.skipped
    tell_outcome(model_admin, request, total)


def report_outcome(
    model_admin: ModelAdmin,
    request: HttpRequest,
    action: JobAction,
    report: operations.ActionReport,
) -> None:
    """Tell the operator what happened, and record it in each changed job's history."""
    record_history(request, action, report)
    tell_outcome(model_admin, request, report)


def record_history(
    request: HttpRequest, action: JobAction, report: operations.ActionReport
) -> None:
    """A history entry (LogEntry) on each job the action changed (deleted jobs have none)."""
    if report.changed_ids and action.name != "delete":
        LogEntry.objects.log_actions(
            # An admin view's user is a logged-in staff user: its pk is set.
            user_id=request.user.pk,  # type: ignore[arg-type]
            queryset=Job.objects.using(job_database())
            .filter(pk__in=report.changed_ids)
            .only("task_path", "status"),
            action_flag=CHANGE,
            change_message=str(action.label),
        )


def tell_outcome(
    model_admin: ModelAdmin, request: HttpRequest, report: operations.ActionReport
) -> None:
    """The message of what changed and what was skipped: a warning when anything was skipped."""
    if report.changed_count and not report.skipped_count:
        level = messages.SUCCESS
    else:
        level = messages.WARNING
    model_admin.message_user(request, report.message(), level)
