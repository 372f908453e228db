"""``JobAdmin``: the job list (lease state at a glance, per-queue health above it) and the
read-only detail page, with race-safe operator actions.

Job data is read-only here: saving a form would write back a stale copy of a row that workers
keep changing. Every change goes through ``actions`` (one conditional statement each).
"""

from functools import partial
from typing import Any
from uuid import UUID

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Func, Q, QuerySet, TextField
from django.db.models.functions import Cast, Left
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from django_leasequeue.admin import argument_search, queues, steps
from django_leasequeue.admin import display as show
from django_leasequeue.admin.actions import (
    ACTIONS,
    bulk_action,
    confirmation_page,
    run_action,
)
from django_leasequeue.admin.dashboard_view import dashboard_view
from django_leasequeue.admin.failure_groups import FailureGroupFilter
from django_leasequeue.admin.failures_page import failures_view
from django_leasequeue.admin.filters import (
    LeaseFilter,
    QueueFilter,
    RecentFailureFilter,
    TaskFilter,
    WorkflowFilter,
)
from django_leasequeue.admin.guarded import GuardedModelAdmin
from django_leasequeue.admin.pagination import EstimatedCountPaginator
from django_leasequeue.admin.worker_admin import worker_link
from django_leasequeue.choices import JobStatus, RunIf
from django_leasequeue.conf import job_database, lease_queue_backends
from django_leasequeue.flow import usage as flow_usage
from django_leasequeue.models import Job
from django_leasequeue.progress.widget import TEMPLATE as PROGRESS_TEMPLATE
from django_leasequeue.progress.widget import progress_bar_context
from django_leasequeue.queue_summary import declared_queues, queue_summary

# The job's JSON columns that may be large: previews on the detail page, whole as downloads.
PAYLOAD_FIELDS = ("args", "kwargs", "result", "checkpoint")


@admin.register(Job)
class JobAdmin(GuardedModelAdmin):
    change_list_template = "admin/leasequeue/job/change_list.html"
    change_form_template = "admin/leasequeue/job/change_form.html"

    list_display = [
        "short_id",
        "task",
        "queue",
        "status_display",
        "attempts",
        "priority_display",
        "worker",
        "heartbeat",
        "lease",
        "progress_display",
        "enqueued",
        "started",
        "finished",
        "run_time",
    ]
    list_filter = [
        "status",
        QueueFilter,
        TaskFilter,
        LeaseFilter,
        RecentFailureFilter,
        WorkflowFilter,
        FailureGroupFilter,
        argument_search.SearchWindowFilter,
    ]
    # Shows the search box; get_search_results decides what a search reads.
    search_fields = ["task_path"]
    search_help_text = _(
        "A job id, a unique key or a worker id (exact), or part of a task path (slower); or "
        "arguments: user_id=42 email=a@b.c (recent jobs holding all of them)."
    )
    # Newest first through the primary key: ids are uuid7, so id order is enqueue order.
    ordering = ["-id"]
    # Only index-backed orderings: any other column would sort the whole table per page load.
    sortable_by = ["short_id", "enqueued"]
    list_per_page = 50
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = [bulk_action(action) for action in ACTIONS.values()]

    readonly_fields = [
        "id",
        "task_path",
        "queue_name",
        "priority",
        "backend",
        "status_display",
        "unique_key",
        "cancel_requested",
        "attempts",
        "snoozes",
        "timeout_seconds",
        "backoff_seconds",
        "worker",
        "worker_history",
        "lease_version",
        "heartbeat",
        "lease",
        "live_progress",
        "when_enqueued",
        "when_due",
        "when_expires",
        "when_started",
        "when_last_attempted",
        "when_finished",
        "run_time",
        "args_json",
        "kwargs_json",
        "result_json",
        "checkpoint_json",
        "error_history",
        "workflow_display",
        "step_display",
        "upstream_steps",
        "downstream_steps",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "task_path",
                    ("queue_name", "priority", "backend"),
                    ("status_display", "cancel_requested"),
                    "unique_key",
                ]
            },
        ),
        (
            _("Attempts and lease"),
            {
                "fields": [
                    ("attempts", "snoozes", "timeout_seconds", "backoff_seconds"),
                    ("worker", "lease_version"),
                    "worker_history",
                    ("heartbeat", "lease"),
                    "live_progress",
                ]
            },
        ),
        (
            _("Timings"),
            {
                "fields": [
                    ("when_enqueued", "when_due", "when_expires"),
                    ("when_started", "when_last_attempted"),
                    ("when_finished", "run_time"),
                ]
            },
        ),
        (_("Data"), {"fields": ["args_json", "kwargs_json", "result_json", "checkpoint_json"]}),
        (_("Errors"), {"fields": ["error_history"]}),
    ]

    class Media:
        css = {"all": ["leasequeue/admin.css"]}

    # Querysets

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        """Never the (possibly huge) JSON payloads: the list shows none, the detail page the
        start of each and its size, and the full value is a download."""
        queryset = super().get_queryset(request).using(job_database()).defer(*PAYLOAD_FIELDS)
        url_name = request.resolver_match.url_name if request.resolver_match else None
        if url_name and url_name.endswith("changelist"):
            return queryset.defer("errors")
        previews: dict[str, Func] = {}
        for name in PAYLOAD_FIELDS:
            as_text = Cast(name, TextField())
            previews[f"{name}_head"] = Left(as_text, show.PREVIEW_BYTES)
            previews[f"{name}_bytes"] = Func(as_text, function="octet_length")
        return queryset.annotate(**previews)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """Arguments (``name=value`` terms, ``argument_search``); a job id (the primary key);
        else a unique key or worker id exactly, or part of a task path. The latter read the
        whole table when few jobs match (docs/admin.md)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        if argument_search.is_argument_search(term):
            try:
                return argument_search.search(queryset, request, term), False
            except ValueError as exc:  # not name=value terms: the reason
                self.message_user(request, str(exc), messages.ERROR)
                return queryset.none(), False
        try:
            return queryset.filter(pk=UUID(term)), False
        except ValueError:
            pass
        return (
            queryset.filter(Q(unique_key=term) | Q(worker_id=term) | Q(task_path__contains=term)),
            False,
        )

    # Permissions: jobs are created by enqueue and changed only through actions.

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict:
        # Django 6.1 passes where the actions are shown; Django 5.2 has no such argument.
        if action_location is None:
            actions = super().get_actions(request)
        else:
            actions = super().get_actions(request, action_location=action_location)
        actions.pop("delete_selected", None)  # ours goes through the protocol
        return actions

    def get_fieldsets(self, request: HttpRequest, obj: Job | None = None) -> list:
        fieldsets = list(super().get_fieldsets(request, obj))
        if obj is not None and obj.workflow_id is not None:  # second on a workflow step's page
            fields = ("workflow_display", "step_display", "upstream_steps", "downstream_steps")
            fieldsets.insert(1, (_("Workflow"), {"fields": fields}))
        return fieldsets

    def has_delete_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        running = obj is not None and obj.status == JobStatus.RUNNING
        return not running and super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Job) -> None:
        """Through the protocol: a job a worker claimed since the page was shown is skipped."""
        run_action(self, request, ACTIONS["delete"], [obj.pk])

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> Any:
        # delete_model already reported what happened; the default message would claim success.
        return HttpResponseRedirect(reverse(f"{self.admin_site.name}:leasequeue_job_changelist"))

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        if request.method == "POST":
            # A saved form would write back a stale copy of a row that workers keep changing.
            return HttpResponseNotAllowed(["GET"])
        return super().changeform_view(request, object_id, form_url, extra_context)

    def render_change_form(
        self, request: HttpRequest, context: dict, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        job = context.get("original")
        context.update(
            show_save=False,
            show_save_and_continue=False,
            show_save_and_add_another=False,
            job_actions=self._object_actions(request, job) if job else [],
        )
        return super().render_change_form(request, context, *args, **kwargs)

    # Summary above the list

    def changelist_view(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        if any("\x00" in value for values in request.GET.lists() for value in values[1]):
            return HttpResponseBadRequest(_("A filter value contains a NUL character."))
        if bad_window := argument_search.bad_window(request):
            return HttpResponseBadRequest(bad_window)
        database = job_database()
        summary = queues.with_pauses(queue_summary(database, declared_queues()), database)
        for row in summary:
            age = row["oldest_due_age"]
            row["oldest_due"] = show.duration(age) if age is not None else show.EMPTY
            row["backlogged"] = age is not None and age.total_seconds() > 60
            for status in row["estimated"]:  # "≈" before a count estimated from a sample
                row[f"{status}_estimated"] = True
        queue_limits = _queue_limits()
        context = {
            "summary": summary,
            **queues.pause_form_context(request),
            "flow_partitions": flow_usage.overview(database, queue_limits),
            "queue_limits": flow_usage.queue_limit_rows(queue_limits, database),
            **argument_search.page_context(request, request.GET.get("q", "").strip()),
        }
        return super().changelist_view(request, {**(extra_context or {}), **context})

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        """The page's jobs, each told why it waits when a limit holds it (one query)."""
        changelist = super().get_changelist_instance(request)
        reasons = flow_usage.waiting_reasons(changelist.result_list, job_database())
        for job in changelist.result_list:
            job.waiting_reason = reasons.get(job.pk, "")
        return changelist

    # Columns

    @admin.display(description=_("id"), ordering="id")
    def short_id(self, job: Job) -> SafeString:
        """The random tail of the uuid7 (its head is the enqueue time, shared by neighbours)."""
        return format_html('<code title="{}">…{}</code>', job.pk, str(job.pk)[-8:])

    @admin.display(description=_("task"))
    def task(self, job: Job) -> SafeString:
        module, _dot, name = job.task_path.rpartition(".")
        return format_html(
            '<span class="lq-clip" title="{}">{}<span class="lq-note">{}</span></span>',
            job.task_path,
            name,
            f" ({module.rpartition('.')[2]})" if module else "",
        )

    @admin.display(description=_("queue"))
    def queue(self, job: Job) -> str:
        return job.queue_name

    @admin.display(description=_("status"))
    def status_display(self, job: Job) -> SafeString:
        """The status, and for a job a limit holds back, why it waits."""
        badge = show.status_badge(job.status, job.cancel_requested)
        reason = getattr(job, "waiting_reason", None)
        if reason is None:  # the detail page: this one job
            reason = flow_usage.waiting_reasons([job], job_database()).get(job.pk, "")
        return (
            format_html('{}<span class="lq-note lq-waiting">{}</span>', badge, reason)
            if reason
            else badge
        )

    @admin.display(description=_("attempt"))
    def attempts(self, job: Job) -> str:
        if job.snoozes:  # snoozed attempts are not counted: say how many there were
            return _("%(attempt)d / %(max)d, %(snoozes)d snoozes") % {
                "attempt": job.attempt,
                "max": job.max_attempts,
                "snoozes": job.snoozes,
            }
        return f"{job.attempt} / {job.max_attempts}"

    @admin.display(description=_("priority"))
    def priority_display(self, job: Job) -> int:
        return job.priority

    @admin.display(description=_("worker"))
    def worker(self, job: Job) -> SafeString | str:
        return worker_link(self.admin_site.name, job.worker_id)

    @admin.display(description=_("heartbeat"))
    def heartbeat(self, job: Job) -> str:
        return show.heartbeat_age(job.status, job.heartbeat_at, timezone.now())

    @admin.display(description=_("lease"))
    def lease(self, job: Job) -> SafeString | str:
        return show.lease_state(job.status, job.lease_expires_at, timezone.now())

    @admin.display(description=_("progress"))
    def progress_display(self, job: Job) -> SafeString | str:
        return show.progress_bar(job.progress, job.status)

    @admin.display(description=_("enqueued"), ordering="id")
    def enqueued(self, job: Job) -> SafeString | str:
        return show.timestamp(job.enqueued_at, timezone.now())

    @admin.display(description=_("started"))
    def started(self, job: Job) -> SafeString | str:
        return show.timestamp(job.started_at, timezone.now())

    @admin.display(description=_("finished"))
    def finished(self, job: Job) -> SafeString | str:
        return show.timestamp(job.finished_at, timezone.now())

    @admin.display(description=_("duration"))
    def run_time(self, job: Job) -> str:
        return show.run_time(job.status, job.started_at, job.finished_at, timezone.now())

    # Detail-only fields

    def _payload(self, job: Job, name: str) -> SafeString:
        url = reverse(f"{self.admin_site.name}:leasequeue_job_payload", args=[job.pk, name])
        return show.json_preview(getattr(job, f"{name}_head"), getattr(job, f"{name}_bytes"), url)

    @admin.display(description=_("args"))
    def args_json(self, job: Job) -> SafeString:
        return self._payload(job, "args")

    @admin.display(description=_("kwargs"))
    def kwargs_json(self, job: Job) -> SafeString:
        return self._payload(job, "kwargs")

    @admin.display(description=_("result"))
    def result_json(self, job: Job) -> SafeString:
        return self._payload(job, "result")

    @admin.display(description=_("checkpoint"))
    def checkpoint_json(self, job: Job) -> SafeString:
        return self._payload(job, "checkpoint")

    def payload_view(self, request: HttpRequest, object_id: str, name: str) -> HttpResponse:
        """One JSON payload of a job, whole, as a download (view permission needed)."""
        job = self.get_object(request, object_id)  # None for a malformed or unknown id
        if job is None or name not in PAYLOAD_FIELDS:
            raise Http404
        if not self.has_view_permission(request, job):
            raise PermissionDenied
        text = (
            Job.objects.using(job_database())
            .filter(pk=job.pk)
            .values_list(Cast(name, TextField()), flat=True)
            .get()
        )
        response = HttpResponse(text or "null", content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="job-{job.pk}-{name}.json"'
        return response

    @admin.display(description=_("errors of every attempt"))
    def error_history(self, job: Job) -> SafeString | str:
        return show.error_list(job.errors)

    @admin.display(description=_("progress"))
    def live_progress(self, job: Job) -> SafeString | str:
        """The live bar of ``{% leasequeue_progress %}`` while the job is unfinished.

        It needs the app's status view (``include("django_leasequeue.urls")``) to poll when
        websockets are not served; without it the stored progress is shown as it was.
        """
        if job.status not in JobStatus.unfinished():
            return show.progress_bar(job.progress, job.status)
        try:
            reverse("leasequeue:job-status", args=[job.pk])
        except NoReverseMatch:
            return show.progress_bar(job.progress, job.status)
        return render_to_string(PROGRESS_TEMPLATE, progress_bar_context(job))

    # A workflow step's place in its workflow

    @admin.display(description=_("workflow"))
    def workflow_display(self, job: Job) -> SafeString | str:
        return steps.workflow_link(job.workflow, self.admin_site.name)

    @admin.display(description=_("step"))
    def step_display(self, job: Job) -> SafeString:
        runs_when = RunIf(job.run_if).label if job.run_if else ""
        return format_html(
            '<strong>{}</strong> <span class="lq-note">{}</span>',
            job.step_name,
            _("runs when %s") % runs_when if runs_when else "",
        )

    @admin.display(description=_("after (upstream)"))
    def upstream_steps(self, job: Job) -> SafeString | str:
        return steps.step_links(steps.upstream(job.pk, job_database()), self.admin_site.name)

    @admin.display(description=_("before (downstream)"))
    def downstream_steps(self, job: Job) -> SafeString | str:
        return steps.step_links(steps.downstream(job.pk, job_database()), self.admin_site.name)

    @admin.display(description=_("enqueued"))
    def when_enqueued(self, job: Job) -> str:
        return show.moment(job.enqueued_at, timezone.now())

    @admin.display(description=_("due"))
    def when_due(self, job: Job) -> str:
        return show.moment(job.run_after, timezone.now())

    @admin.display(description=_("expires"))
    def when_expires(self, job: Job) -> str:
        """When an unstarted job stops being worth running (``expires_after``)."""
        return show.moment(job.expires_at, timezone.now())

    @admin.display(description=_("first started"))
    def when_started(self, job: Job) -> str:
        return show.moment(job.started_at, timezone.now())

    @admin.display(description=_("last attempt started"))
    def when_last_attempted(self, job: Job) -> str:
        return show.moment(job.last_attempted_at, timezone.now())

    @admin.display(description=_("finished"))
    def when_finished(self, job: Job) -> str:
        return show.moment(job.finished_at, timezone.now())

    @admin.display(description=_("workers of every attempt"))
    def worker_history(self, job: Job) -> str:
        return ", ".join(job.worker_ids) or show.EMPTY

    # Actions on one job (buttons on the detail page)

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        # Pausing commits on its own: never inside a request's transaction (ATOMIC_REQUESTS).
        outside_transaction = transaction.non_atomic_requests(using=job_database())

        @outside_transaction
        def pause_queue(request: HttpRequest) -> HttpResponse:
            return queues.pause_view(request, self._changelist_url())

        def resume_queue(request: HttpRequest) -> HttpResponse:
            return queues.resume_view(request, self._changelist_url())

        @outside_transaction  # a group's action commits batch by batch
        def failures(request: HttpRequest) -> HttpResponse:
            return failures_view(self, request)

        return [
            path(
                "failures/",
                self.admin_site.admin_view(failures),
                name="{}_{}_failures".format(*info),
            ),
            path(
                "dashboard/",
                self.admin_site.admin_view(partial(dashboard_view, self)),
                name="{}_{}_dashboard".format(*info),
            ),
            path(
                "queues/pause/",
                self.admin_site.admin_view(pause_queue),
                name="{}_{}_pause_queue".format(*info),
            ),
            path(
                "queues/resume/",
                self.admin_site.admin_view(resume_queue),
                name="{}_{}_resume_queue".format(*info),
            ),
            path(
                "<path:object_id>/json/<str:name>/",
                self.admin_site.admin_view(self.payload_view),
                name="{}_{}_payload".format(*info),
            ),
            path(
                "<path:object_id>/<str:action_name>/run/",
                self.admin_site.admin_view(self.job_action_view),
                name="{}_{}_action".format(*info),
            ),
            *super().get_urls(),
        ]

    def _changelist_url(self) -> str:
        return reverse(f"{self.admin_site.name}:leasequeue_job_changelist")

    def _object_actions(self, request: HttpRequest, job: Job) -> list[dict[str, Any]]:
        """The buttons the detail page shows: actions that apply to the job and are permitted."""
        return [
            {
                "action": action,
                "url": reverse(
                    f"{self.admin_site.name}:leasequeue_job_action", args=[job.pk, action.name]
                ),
            }
            for action in ACTIONS.values()
            if action.name != "delete"  # the admin's own delete link, through delete_model
            and job.status in action.applies_to
            and action.allowed(self, request, job)
        ]

    def job_action_view(self, request: HttpRequest, object_id: str, action_name: str) -> Any:
        """GET: confirm (destructive actions); POST: run the action on this one job."""
        action = ACTIONS.get(action_name)
        job = self.get_object(request, object_id)  # None for a malformed or unknown id
        if job is None or action is None or action.name == "delete":
            raise Http404
        if not action.allowed(self, request, job):
            raise PermissionDenied
        if request.method == "POST":
            run_action(self, request, action, [job.pk])
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:leasequeue_job_change", args=[job.pk])
            )
        if request.method == "GET" and action.confirm:
            return confirmation_page(self, request, action, [job.pk], bulk=False)
        return HttpResponseNotAllowed(["POST"])


def _queue_limits() -> dict:
    """Every lease-queue backend's queue limits (the admin lists them together)."""
    limits = {}
    for backend in lease_queue_backends():
        limits.update(backend.config.queue_limits)
    return limits
