"""List filters of the job admin; none of them scans the table to build its choices."""

from datetime import timedelta
from uuid import UUID

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from django_leasequeue.choices import JobStatus
from django_leasequeue.conf import job_database, lease_queue_backends
from django_leasequeue.sql import reads as reads_sql
from django_leasequeue.sql.executor import execute

# Most task paths the task filter offers.
TASK_CHOICES_LIMIT = 200


class QueueFilter(admin.SimpleListFilter):
    """Queues configured in TASKS; reading them from the table would be a full scan."""

    title = _("queue")
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        queues: set[str] = set()
        for backend in lease_queue_backends():
            queues |= backend.queues
        return [(name, name) for name in sorted(queues)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(queue_name=self.value()) if self.value() else queryset


class TaskFilter(admin.SimpleListFilter):
    """Task paths found by a loose index scan: one index probe per distinct path."""

    title = _("task")
    parameter_name = "task"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        paths = execute(reads_sql.task_paths(limit=TASK_CHOICES_LIMIT), job_database())
        return [(path, path) for path in paths]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(task_path=self.value()) if self.value() else queryset


class LeaseFilter(admin.SimpleListFilter):
    """Running jobs whose worker stopped renewing the lease: the recover sweep will retry them."""

    title = _("lease")
    parameter_name = "lease"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        return [
            ("expired", _("Expired — will be recovered")),
            ("held", _("Held by a live worker")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        running = queryset.filter(status=JobStatus.RUNNING)
        if self.value() == "expired":
            return running.filter(lease_expires_at__lt=timezone.now())
        if self.value() == "held":
            return running.filter(lease_expires_at__gte=timezone.now())
        return queryset


class RecentFailureFilter(admin.SimpleListFilter):
    """Dead-lettered jobs by when they failed (the status/finished_at index answers it)."""

    title = _("failed recently")
    parameter_name = "failed_within"
    _WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(days=1)}

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        return [("1h", _("Failed in the last hour")), ("24h", _("Failed in the last 24 hours"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        window = self._WINDOWS.get(self.value() or "")
        if window is None:
            return queryset
        return queryset.filter(status=JobStatus.FAILED, finished_at__gte=timezone.now() - window)


class WorkflowFilter(admin.SimpleListFilter):
    """A workflow's steps (``?workflow=<id>``, the link on a workflow's page); offered only
    once chosen, as listing every workflow here would not scale."""

    title = _("workflow")
    parameter_name = "workflow"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        value = self.value()
        return [(value, _("this workflow's steps"))] if value else []

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.value():
            return queryset
        try:
            return queryset.filter(workflow_id=UUID(self.value()))
        except ValueError:
            return queryset.none()
