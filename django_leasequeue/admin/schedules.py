"""The Schedules page: every schedule declared in code, its next and last run, and the
operator's pause, resume and run-now actions.

Schedules come from code, so there is nothing to add or edit here. Pause and resume are one
conditional UPDATE each that also bumps the schedule's version, so a worker about to fire a
tick of a schedule that was just paused loses its compare-and-swap; every worker sees the new
state at its next check (within a second). Run now goes through the same statement as a
tick (``schedules.firing.run_now``), so it obeys the overlap policy.
"""

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Now
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from django_leasequeue.admin import display as show
from django_leasequeue.backend import job_database, lease_queue_backend
from django_leasequeue.models import Job, Schedule
from django_leasequeue.schedules.declaration import declaration_of
from django_leasequeue.schedules.discovery import scheduled_tasks
from django_leasequeue.schedules.firing import ScheduleChanged, run_now
from django_leasequeue.schedules.timing import InvalidSchedule, timing_of


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
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

    # Actions

    @admin.action(description=_("Pause selected schedules"), permissions=["change"])
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.filter(paused=False, retired=False).update(
            paused=True, version=F("version") + 1
        )
        self.message_user(
            request,
            ngettext("%d schedule paused.", "%d schedules paused.", count) % count,
            messages.SUCCESS,
        )

    @admin.action(description=_("Resume selected schedules"), permissions=["change"])
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet) -> None:
        """Ticks that passed while paused are not caught up: the schedule starts again now."""
        count = queryset.filter(paused=True).update(
            paused=False, covered_until=Now(), next_run_at=Now(), version=F("version") + 1
        )
        self.message_user(
            request,
            ngettext("%d schedule resumed.", "%d schedules resumed.", count) % count,
            messages.SUCCESS,
        )

    @admin.action(description=_("Run selected schedules now"), permissions=["change"])
    def run_schedules_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        """One job each, now, unless the overlap policy skips it (the ticks do not move)."""
        declared = {task.module_path: task for task in scheduled_tasks()}
        using = job_database()
        for schedule in queryset:
            task = declared.get(schedule.task_path)
            if schedule.retired or task is None:
                self.message_user(
                    request,
                    _("%s is not in the code: it cannot run.") % schedule.task_path,
                    messages.ERROR,
                )
                continue
            try:
                with transaction.atomic(using=using):
                    job_id = run_now(lease_queue_backend(task.backend), declaration_of(task))
            except (InvalidSchedule, ScheduleChanged) as exc:
                self.message_user(request, f"{schedule.task_path}: {exc}", messages.ERROR)
                continue
            if job_id is None:
                self.message_user(
                    request,
                    _("%s: skipped, its previous run is unfinished (overlap: skip).")
                    % schedule.task_path,
                    messages.WARNING,
                )
            else:
                self.message_user(
                    request,
                    format_html(
                        '{}: <a href="{}">job {}</a> enqueued.',
                        schedule.task_path,
                        reverse(f"{self.admin_site.name}:leasequeue_job_change", args=[job_id]),
                        job_id,
                    ),
                    messages.SUCCESS,
                )
