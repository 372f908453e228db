"""The Workers page: every worker process in ``leasequeue_worker``, read-only.

Rows are written by the workers themselves (``runtime/registry.py``); the admin only shows
them. A worker reads dead when its heartbeat is older than its lease or its supervisor saw it
die; such rows go after ``worker_retention_seconds``.
"""

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from django_leasequeue.admin import display as show
from django_leasequeue.admin.guarded import GuardedModelAdmin
from django_leasequeue.choices import WorkerState
from django_leasequeue.conf import job_database
from django_leasequeue.models import Worker

_STATE_SYMBOLS = {WorkerState.ALIVE: "▶", WorkerState.DEAD: "✖", WorkerState.STOPPED: "■"}


def worker_link(admin_site: str, worker_id: str | None) -> SafeString | str:
    """A job's worker id, linked to that worker's page (which says so if its row is gone)."""
    if not worker_id:
        return show.EMPTY
    url = reverse(f"{admin_site}:leasequeue_worker_change", args=[quote(worker_id)])
    return format_html('<a href="{}">{}</a>', url, show.clipped(worker_id))


@admin.register(Worker)
class WorkerAdmin(GuardedModelAdmin):
    list_display = [
        "id",
        "state_display",
        "host",
        "pid",
        "queues_display",
        "concurrency",
        "jobs_running",
        "jobs_done",
        "started",
        "heartbeat",
        "exit",
    ]
    list_display_links = ["id"]
    search_fields = ["id", "host"]
    search_help_text = _("A worker id or a host name (part of it).")
    readonly_fields = [
        "id",
        "state_display",
        "host",
        "pid",
        "queues_display",
        "concurrency",
        "lease_seconds",
        "jobs_running",
        "jobs_done",
        "started_at",
        "heartbeat",
        "stopped_at",
        "exit",
        "jobs_link",
    ]
    fields = [*readonly_fields]
    list_per_page = 100

    class Media:
        css = {"all": ["leasequeue/admin.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Worker]:
        return super().get_queryset(request).using(job_database())

    # Rows belong to the workers: nobody adds, edits or deletes them here.

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False

    @admin.display(description=_("state"))
    def state_display(self, worker: Worker) -> SafeString:
        state = worker.state(timezone.now())
        return format_html(
            '<span class="lq-worker lq-worker-{}"><span aria-hidden="true">{}</span> {}</span>',
            state,
            _STATE_SYMBOLS[state],
            state.label,
        )

    @admin.display(description=_("queues"))
    def queues_display(self, worker: Worker) -> str | Promise:
        return ", ".join(worker.queues) if worker.queues is not None else _("every queue")

    @admin.display(description=_("started"), ordering="started_at")
    def started(self, worker: Worker) -> SafeString | str:
        return show.timestamp(worker.started_at, timezone.now())

    @admin.display(description=_("last heartbeat"), ordering="heartbeat_at")
    def heartbeat(self, worker: Worker) -> str:
        return _("%s ago") % show.duration(timezone.now() - worker.heartbeat_at)

    @admin.display(description=_("jobs"))
    def jobs_link(self, worker: Worker) -> SafeString:
        """The jobs whose current lease this worker holds or held (the job list's search)."""
        url = reverse(f"{self.admin_site.name}:leasequeue_job_changelist")
        return format_html('<a href="{}?q={}">{}</a>', url, worker.id, _("its jobs"))
