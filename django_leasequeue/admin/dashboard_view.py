"""The dashboard page (``admin:leasequeue_job_dashboard``): per queue, charts of the recent past
over the window chosen (``?window=1h``, ``24h``, ``7d``), and the same series as JSON
(``?format=json``, documented in docs/admin.md). Staff with the job view permission only."""

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
    JsonResponse,
)
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from django_leasequeue.admin.dashboard_charts import interval_times, queue_charts
from django_leasequeue.admin.window_parameter import chosen_window
from django_leasequeue.conf import job_database
from django_leasequeue.history.series import DEFAULT_WINDOW, WINDOWS, dashboard
from django_leasequeue.queue_summary import declared_queues

TEMPLATE = "admin/leasequeue/job/dashboard.html"
# What the page takes from its URL: anything else is refused (400), as on the job list.
PARAMETERS = {"window", "format"}


def dashboard_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    unknown = sorted(set(request.GET) - PARAMETERS)
    if unknown:
        return HttpResponseBadRequest(
            _("The dashboard takes no parameter %(names)s; it takes window and format.")
            % {"names": ", ".join(unknown)}
        )
    name, window = chosen_window(request.GET, WINDOWS, DEFAULT_WINDOW)
    if window is None:
        return HttpResponseBadRequest(
            _("No window %(name)r: choose one of %(windows)s.")
            % {"name": name, "windows": ", ".join(WINDOWS)}
        )
    answer = request.GET.get("format")
    if answer not in (None, "json"):
        return HttpResponseBadRequest(
            _("No format %(name)r: the dashboard answers in HTML, or JSON with format=json.")
            % {"name": answer}
        )
    history = dashboard(window, job_database(), declared_queues())
    if answer == "json":
        return JsonResponse(history.as_json())
    when = interval_times(window, window.starts(history.now))
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": _("Queues dashboard"),
        "window": window,
        "windows": [
            (choice, "" if choice == DEFAULT_WINDOW else f"?window={choice}") for choice in WINDOWS
        ],
        "json_query": f"?window={window.name}&format=json",
        "queues": [
            (series.queue_name, queue_charts(series, window, when)) for series in history.queues
        ],
        "now": history.now,
    }
    return TemplateResponse(request, TEMPLATE, context)
