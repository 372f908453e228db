"""The Schedules page's actions (pause, resume, run now) and the one message each leaves: what it
did, and which schedules it skipped and why, by name, as the job actions report theirs.

Pause and resume lock the selected rows while they sort them, so the reasons given are those of
the rows they changed or left (a worker firing a tick waits for that short lock). Every message
starts with a count: Django's admin capitalises a message's first letter, and a task path must
keep its own case.
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

from django.db import transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Now
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from django_leasequeue.conf import job_database, lease_queue_backend
from django_leasequeue.exceptions import InvalidSchedule, ScheduleChanged
from django_leasequeue.models import Schedule
from django_leasequeue.schedules.declaration import declaration_of
from django_leasequeue.schedules.discovery import scheduled_tasks
from django_leasequeue.schedules.firing import run_now


@dataclass
class ScheduleReport:
    """What an action did to each selected schedule: changed (each with what to show for it), or
    skipped with a reason."""

    changed: list[SafeString | str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def message(self, done: str) -> SafeString:
        """E.g. "1 schedule resumed (myapp.tasks.a); 2 skipped: not paused (myapp.tasks.b,
        myapp.tasks.c)", where ``done`` is the first part, counted ("1 schedule resumed")."""
        text = format_html("{}", done)
        if self.changed:
            changed = format_html_join(", ", "{}", ((item,) for item in self.changed))
            text = format_html("{} ({})", text, changed)
        if self.skipped:
            skipped = sum(len(paths) for paths in self.skipped.values())
            reasons = format_html_join(
                "; ",
                "{} ({})",
                ((reason, ", ".join(paths)) for reason, paths in sorted(self.skipped.items())),
            )
            counted = ngettext("%(count)d skipped", "%(count)d skipped", skipped)
            text = format_html("{}; {}: {}", text, counted % {"count": skipped}, reasons)
        return text


def pause_schedules(queryset: QuerySet) -> ScheduleReport:
    """Pause the active schedules of the selection (a retired one never fires anyway)."""
    report, pks = ScheduleReport(), []
    with transaction.atomic(using=job_database()):
        for row in queryset.select_for_update().values("pk", "task_path", "paused", "retired"):
            if row["retired"]:
                report.skipped[_("retired: no longer in the code")].append(row["task_path"])
            elif row["paused"]:
                report.skipped[_("already paused")].append(row["task_path"])
            else:
                report.changed.append(row["task_path"])
                pks.append(row["pk"])
        Schedule.objects.using(job_database()).filter(pk__in=pks).update(
            paused=True, version=F("version") + 1
        )
    return report


def resume_schedules(queryset: QuerySet) -> ScheduleReport:
    """Ticks that passed while paused are not caught up: the schedule starts again now."""
    report, pks = ScheduleReport(), []
    with transaction.atomic(using=job_database()):
        for row in queryset.select_for_update().values("pk", "task_path", "paused"):
            if row["paused"]:
                report.changed.append(row["task_path"])
                pks.append(row["pk"])
            else:
                report.skipped[_("not paused")].append(row["task_path"])
        Schedule.objects.using(job_database()).filter(pk__in=pks).update(
            paused=False, covered_until=Now(), next_run_at=Now(), version=F("version") + 1
        )
    return report


def run_selected_now(queryset: QuerySet, job_url: Callable[[UUID], str]) -> ScheduleReport:
    """One job each, now, unless the overlap policy skips it (the ticks do not move).
    ``job_url`` gives the admin URL of a job's page."""
    declared = {task.module_path: task for task in scheduled_tasks()}
    report = ScheduleReport()
    for schedule in queryset:
        task = declared.get(schedule.task_path)
        if schedule.retired or task is None:
            report.skipped[_("not in the code: it cannot run")].append(schedule.task_path)
            continue
        try:
            with transaction.atomic(using=job_database()):
                job_id = run_now(lease_queue_backend(task.backend).enqueuer, declaration_of(task))
        except InvalidSchedule as exc:
            report.skipped[str(exc)].append(schedule.task_path)
            continue
        except ScheduleChanged:
            report.skipped[_("changed while it was run (fired or retired); try again")].append(
                schedule.task_path
            )
            continue
        if job_id is None:
            reason = _("its previous run is unfinished (overlap: skip)")
            report.skipped[reason].append(schedule.task_path)
        else:
            report.changed.append(
                format_html(
                    '{}: <a href="{}">job {}</a>',
                    schedule.task_path,
                    job_url(job_id),
                    job_id,
                )
            )
    return report
