"""The Schedules page: every schedule declared in code, its next and last run, and the
operator's pause, resume and run-now actions.

Schedules come from code, so there is nothing to add or edit here. Pause and resume are one
conditional UPDATE each that also bumps the schedule's version, so a worker about to fire a
tick of a schedule that was just paused loses its compare-and-swap; every worker sees the new
state at its next check (within a second). Run now goes through the same statement as a
tick (``schedules.firing.run_now``), so it obeys the overlap policy. The actions themselves, and
the message each leaves, are in ``admin.schedule_actions``.
"""

from typing import Any

from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from django_leasequeue.admin import display as show
from django_leasequeue.admin import schedule_actions
from django_leasequeue.admin.guarded import GuardedModelAdmin
from django_leasequeue.conf import job_database
from django_leasequeue.exceptions import InvalidSchedule
from django_leasequeue.models import Job, Schedule
from django_leasequeue.schedules.timing import timing_of


@admin.register(Schedule)
class ScheduleAdmin(GuardedModelAdmin):
    list_display = [
        "task_path",
        "expression",
        "state",
        "next_run",
        "last_run",
        "skipped_count",
        "missed_count",
    ]
    list_filter = ["paused", "retired"]
    search_fields = ["task_path"]
    actions = ["pause_schedules", "resume_schedules", "run_schedules_now"]
    readonly_fields = [
        "task_path",
        "backend",
        "expression",
        "cron",
        "cron_timezone",
        "every",
        "overlap",
        "catch_up",
        "state",
        "next_run",
        "last_run",
        "skipped_count",
        "missed_count",
        "covered_until",
        "created_at",
    ]
    fields = [*readonly_fields]

    class Media:
        css = {"all": ["leasequeue/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        last_job = Job.objects.filter(id=OuterRef("last_job_id"))
        return (
            super()
            .get_queryset(request)
            .using(job_database())
            .annotate(last_job_status=Subquery(last_job.values("status")[:1]))
        )

    # Permissions: schedules are declared in code; staff change only their state, by actions.

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        """The actions need it; a schedule's page is read-only (saving it would write back a
        stale copy of a row that workers keep advancing)."""
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        """Only a retired schedule's row may go (a live one would be written again)."""
        live = obj is not None and not obj.retired
        return not live and super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict:
        # Django 6.1 passes where the actions are shown; Django 5.2 has no such argument.
        if action_location is None:
            actions = super().get_actions(request)
        else:
            actions = super().get_actions(request, action_location=action_location)
        actions.pop("delete_selected", None)
        return actions

    # Columns

    @admin.display(description=_("schedule"))
    def expression(self, schedule: Schedule) -> str:
        """The timing in words, then as written (``*/5 * * * *`` or the interval)."""
        try:
            timing = timing_of(
                schedule.cron,
                schedule.cron_timezone,
                schedule.every,
                timezone.get_current_timezone_name(),
            )
        except InvalidSchedule as exc:
            return str(exc)
        written = (
            f'cron="{schedule.cron}"'
            if schedule.cron is not None
            else f"every={schedule.every!r}".replace("datetime.", "")
        )
        return f"{timing.describe()} — {written}"

    @admin.display(description=_("state"))
    def state(self, schedule: Schedule) -> SafeString:
        if schedule.retired:
            label, css = _("retired: no longer in the code"), "lq-expired"
        elif schedule.paused:
            label, css = _("paused"), "lq-note"
        else:
            label, css = _("active"), ""
        return format_html('<span class="{}">{}</span>', css, label)

    @admin.display(description=_("next run"))
    def next_run(self, schedule: Schedule) -> SafeString | str:
        if schedule.retired or schedule.paused:
            return show.EMPTY
        return show.moment(schedule.next_run_at, timezone.now())

    @admin.display(description=_("last run"))
    def last_run(self, schedule: Schedule) -> SafeString | str:
        if schedule.last_job_id is None:
            return show.EMPTY
        when = show.moment(schedule.last_run_at, timezone.now())
        status = getattr(schedule, "last_job_status", None)
        if status is None:
            return format_html("{} ({})", when, _("job deleted"))
        url = reverse(f"{self.admin_site.name}:leasequeue_job_change", args=[schedule.last_job_id])
        return format_html('<a href="{}">{}</a> {}', url, when, show.status_badge(status))

    # Actions (admin/schedule_actions.py): one message each, naming what was skipped and why.

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> Any:
        """A user without any action (view permission only) who posts one anyway is told why
        nothing happened; Django would show the page again without a word. A user who may not
        even view schedules gets Django's 403, as for the page itself."""
        if (
            request.method == "POST"
            and "action" in request.POST
            and self.has_view_permission(request)
            and not self.get_actions(request)
        ):
            self.message_user(
                request,
                _(
                    "Nothing was changed: pausing, resuming and running schedules needs the "
                    "“Can change schedule” permission, and you may only view them."
                ),
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().changelist_view(request, extra_context)

    @admin.action(description=_("Pause selected schedules"), permissions=["change"])
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet) -> None:
        report = schedule_actions.pause_schedules(queryset)
        count = len(report.changed)
        done = ngettext("%(count)d schedule paused", "%(count)d schedules paused", count)
        self._tell(request, report, done % {"count": count})

    @admin.action(description=_("Resume selected schedules"), permissions=["change"])
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet) -> None:
        """Ticks that passed while paused are not caught up: the schedule starts again now."""
        report = schedule_actions.resume_schedules(queryset)
        count = len(report.changed)
        done = ngettext("%(count)d schedule resumed", "%(count)d schedules resumed", count)
        self._tell(request, report, done % {"count": count})

    @admin.action(description=_("Run selected schedules now"), permissions=["change"])
    def run_schedules_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        """One job each, now, unless the overlap policy skips it (the ticks do not move)."""
        site = self.admin_site.name
        report = schedule_actions.run_selected_now(
            queryset, lambda job_id: reverse(f"{site}:leasequeue_job_change", args=[job_id])
        )
        count = len(report.changed)
        done = ngettext("%(count)d job enqueued", "%(count)d jobs enqueued", count)
        self._tell(request, report, done % {"count": count})

    def _tell(
        self, request: HttpRequest, report: schedule_actions.ScheduleReport, done: str
    ) -> None:
        level = messages.SUCCESS if report.changed and not report.skipped else messages.WARNING
        self.message_user(request, report.message(done), level)
