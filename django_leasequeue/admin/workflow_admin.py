"""The Workflows page: every enqueued workflow, its status and its steps' counts, read-only;
and a workflow's own page: its fields and live bar, then its graph and steps
(``workflow_page``) and the operator's buttons (``workflow_actions``).

Everything the list shows comes from the workflow rows, whose counters the step trigger keeps,
plus one query over the running jobs of the workflows on the page: a 10,000-step workflow
costs the list no more than a small one.
"""

from functools import partial
from typing import Any
from uuid import UUID

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_leasequeue.admin import display as show
from django_leasequeue.admin import workflow_actions as actions
from django_leasequeue.admin.guarded import GuardedModelAdmin
from django_leasequeue.admin.pagination import EstimatedCountPaginator
from django_leasequeue.admin.workflow_page import page_context, step_counts
from django_leasequeue.choices import JobStatus, WorkflowStatus
from django_leasequeue.conf import job_database
from django_leasequeue.models import Job, WorkflowRun
from django_leasequeue.progress.widget import TEMPLATE as PROGRESS_TEMPLATE
from django_leasequeue.progress.widget import workflow_bar_context


@admin.register(WorkflowRun)
class WorkflowRunAdmin(GuardedModelAdmin):
    change_form_template = "admin/leasequeue/workflowrun/change_form.html"

    list_display = [
        "name_display",
        "short_id",
        "status_display",
        "steps_display",
        "running_count",
        "waiting_count",
        "failed_count",
        "age",
        "run_time",
    ]
    list_display_links = ["name_display"]
    list_filter = ["status"]
    search_fields = ["name"]  # shows the search box; get_search_results does the search
    search_help_text = gettext_lazy("A workflow id (exact), or part of a name (slower).")
    # Newest first through the primary key: ids are uuid7, so id order is creation order.
    ordering = ["-id"]
    sortable_by = ["short_id", "age"]
    list_per_page = 50
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    readonly_fields = [
        "id",
        "name",
        "backend",
        "status_display",
        "steps_summary",
        "live_progress",
        "when_created",
        "when_finished",
        "run_time",
    ]
    fieldsets = [
        (None, {"fields": ["id", "name", "status_display", "backend"]}),
        (gettext_lazy("Steps"), {"fields": ["steps_summary", "live_progress"]}),
        (
            gettext_lazy("Timings"),
            {"fields": [("when_created", "when_finished"), "run_time"]},
        ),
    ]

    class Media:
        css = {"all": ["leasequeue/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkflowRun]:
        return super().get_queryset(request).using(job_database())

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """A workflow id (the primary key), else part of a name."""
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            return queryset.filter(pk=UUID(term)), False
        except ValueError:
            return queryset.filter(name__icontains=term), False

    # Read-only: workflows are written by enqueue and the step trigger; staff act by buttons.

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # The list

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        """The page's workflows, each told how many of its steps run now (one query, over
        running jobs only)."""
        changelist = super().get_changelist_instance(request)
        running = running_steps(
            [w.pk for w in changelist.result_list if w.status == WorkflowStatus.RUNNING]
        )
        for workflow in changelist.result_list:
            workflow.steps_running = running.get(workflow.pk, 0)
        return changelist

    @admin.display(description=gettext_lazy("name"))
    def name_display(self, workflow: WorkflowRun) -> str:
        return workflow.name or _("(unnamed)")

    @admin.display(description=gettext_lazy("id"), ordering="id")
    def short_id(self, workflow: WorkflowRun) -> SafeString:
        return format_html('<code title="{}">…{}</code>', workflow.pk, str(workflow.pk)[-8:])

    @admin.display(description=gettext_lazy("status"))
    def status_display(self, workflow: WorkflowRun) -> SafeString:
        return show.workflow_badge(workflow.status, workflow.cancel_requested)

    @admin.display(description=gettext_lazy("steps finished"))
    def steps_display(self, workflow: WorkflowRun) -> SafeString:
        finished = workflow.steps_total - workflow.steps_unfinished
        return format_html(
            '<span class="lq-progress"><progress max="{}" value="{}" aria-label="{}"></progress>'
            " {} / {}</span>",
            workflow.steps_total,
            finished,
            _("steps finished"),
            finished,
            workflow.steps_total,
        )

    @admin.display(description=gettext_lazy("running"))
    def running_count(self, workflow: WorkflowRun) -> int:
        return _running(workflow)

    @admin.display(description=gettext_lazy("waiting or queued"))
    def waiting_count(self, workflow: WorkflowRun) -> int:
        return workflow.steps_unfinished - _running(workflow)

    @admin.display(description=gettext_lazy("failed or cancelled"))
    def failed_count(self, workflow: WorkflowRun) -> SafeString | int:
        if workflow.steps_failed:
            return format_html('<span class="lq-expired">{}</span>', workflow.steps_failed)
        return 0

    @admin.display(description=gettext_lazy("age"), ordering="id")
    def age(self, workflow: WorkflowRun) -> SafeString:
        now = timezone.now()
        return format_html(
            '<span title="{}">{}</span>',
            show.moment(workflow.created_at, now),
            _("%s ago") % show.duration(now - workflow.created_at),
        )

    @admin.display(description=gettext_lazy("duration"))
    def run_time(self, workflow: WorkflowRun) -> str:
        if workflow.finished_at is not None:
            return show.duration(workflow.finished_at - workflow.created_at)
        return _("%s so far") % show.duration(timezone.now() - workflow.created_at)

    # The workflow's page

    @admin.display(description=gettext_lazy("counts"))
    def steps_summary(self, workflow: WorkflowRun) -> str:
        """Every step the page lists, callbacks included, counted by its status. (The list's
        "failed or cancelled" leaves out callbacks, cancelled for their condition or with their
        workflow: it counts what went wrong.)"""
        counts = step_counts(workflow, job_database())
        total = sum(counts.values())
        finished = sum(counts.get(status, 0) for status in JobStatus.terminal())
        running = counts.get(JobStatus.RUNNING, 0)
        return _(
            "%(finished)d of %(total)d finished: %(succeeded)d succeeded, %(failed)d failed, "
            "%(cancelled)d cancelled; %(running)d running, %(waiting)d waiting, queued or "
            "retrying."
        ) % {
            "finished": finished,
            "total": total,
            "succeeded": counts.get(JobStatus.SUCCEEDED, 0),
            "failed": counts.get(JobStatus.FAILED, 0),
            "cancelled": counts.get(JobStatus.CANCELLED, 0),
            "running": running,
            "waiting": total - finished - running,
        }

    @admin.display(description=gettext_lazy("progress"))
    def live_progress(self, workflow: WorkflowRun) -> SafeString | str:
        """The live bar of ``{% leasequeue_progress %}``, when the app's URLs are included (its
        polling needs the JSON view)."""
        try:
            reverse("leasequeue:workflow-status", args=[workflow.pk])
        except NoReverseMatch:
            return show.EMPTY
        return render_to_string(PROGRESS_TEMPLATE, workflow_bar_context(workflow.pk))

    @admin.display(description=gettext_lazy("created"))
    def when_created(self, workflow: WorkflowRun) -> str:
        return show.moment(workflow.created_at, timezone.now())

    @admin.display(description=gettext_lazy("finished"))
    def when_finished(self, workflow: WorkflowRun) -> str:
        return show.moment(workflow.finished_at, timezone.now())

    def render_change_form(
        self, request: HttpRequest, context: dict, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        workflow = context.get("original")
        if workflow is not None:
            context.update(
                workflow_buttons=actions.buttons(self, request, workflow),
                **page_context(workflow, self.admin_site.name, job_database()),
            )
        return super().render_change_form(request, context, *args, **kwargs)

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/cancel/",
                self.admin_site.admin_view(partial(actions.cancel_view, self)),
                name="{}_{}_cancel".format(*info),
            ),
            path(
                "<path:object_id>/retry-failed/",
                self.admin_site.admin_view(partial(actions.retry_view, self)),
                name="{}_{}_retry".format(*info),
            ),
            *super().get_urls(),
        ]


def running_steps(workflow_ids: list[UUID]) -> dict[UUID, int]:
    """How many steps of each of these workflows run now (the running jobs' index)."""
    if not workflow_ids:
        return {}
    rows = (
        Job.objects.using(job_database())
        .filter(status=JobStatus.RUNNING, workflow_id__in=workflow_ids)
        .values("workflow_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {row["workflow_id"]: row["n"] for row in rows}


def _running(workflow: WorkflowRun) -> int:
    """Steps running now: counted for the whole list page, else for this one workflow."""
    running = getattr(workflow, "steps_running", None)
    if running is None:
        running = 0
        if workflow.status == WorkflowStatus.RUNNING:
            running = running_steps([workflow.pk]).get(workflow.pk, 0)
        workflow.steps_running = running  # type: ignore[attr-defined]  # read back above
    return running
