"""The failures page (``admin:leasequeue_job_failures``): a window's failed jobs grouped by task
and the exception class of their last error, as HTML or JSON (``?format=json``), and each
group's Retry and Delete, acting on every job of the group in batches through the list's
actions (the same statements, messages, history entries and permissions).
"""

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from django_leasequeue.admin import display
from django_leasequeue.admin.actions import ACTIONS, run_action_in_batches
from django_leasequeue.admin.failure_groups import (
    DEFAULT_WINDOW,
    MAX_GROUPS,
    WINDOWS,
    FailureGroups,
    GroupKey,
    failure_groups,
)
from django_leasequeue.admin.window_parameter import chosen_window

# The actions a group offers: the list's own, by name.
GROUP_ACTIONS = ("retry", "delete")


def failures_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """GET: the groups (``?window=1h|24h|7d``, ``?format=json``); POST: a group's action."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    if request.method == "POST":
        return _group_action(model_admin, request)
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    window, span = chosen_window(request.GET, WINDOWS, DEFAULT_WINDOW)
    if span is None:
        return HttpResponseBadRequest(
            _("Unknown window %(window)r: choose one of %(windows)s.")
            % {"window": window, "windows": ", ".join(WINDOWS)}
        )
    answer = request.GET.get("format", "html")
    if answer not in ("html", "json"):
        return HttpResponseBadRequest(_("Unknown format %r: html or json.") % answer)
    found = failure_groups(span)
    if answer == "json":
        return JsonResponse({"groups": [group.as_json() for group in found.groups]})
    return _page(model_admin, request, window, found)


def _page(
    model_admin: ModelAdmin, request: HttpRequest, window: str, found: FailureGroups
) -> HttpResponse:
    admin_name = model_admin.admin_site.name
    changelist = reverse(f"{admin_name}:leasequeue_job_changelist")
    now = timezone.now()
    rows = [
        {
            "group": group,
            "key": (key := group.key.encode()),
            "jobs_url": f"{changelist}?{urlencode({'failure': key})}",
            "first_seen": display.timestamp(group.first_seen, now),
            "last_seen": display.timestamp(group.last_seen, now),
        }
        for group in found.groups
    ]
    context = {
        **model_admin.admin_site.each_context(request),
        "title": _("Failures"),
        "opts": model_admin.opts,
        "window": window,
        "windows": list(WINDOWS),
        "rows": rows,
        "total": found.total,
        "capped": found.total > len(found.groups),
        "max_groups": MAX_GROUPS,
        "may_retry": ACTIONS["retry"].allowed(model_admin, request, None),
        "may_delete": ACTIONS["delete"].allowed(model_admin, request, None),
        "media": model_admin.media,
    }
    return TemplateResponse(request, "admin/leasequeue/job/failures.html", context)


def _group_action(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """``action=retry`` (or ``action=delete`` with ``post=yes``) and ``group=<key>``: the action
    on every job of the group as the page showed it; a delete without ``post=yes`` asks first."""
    name = request.POST.get("action", "")
    if name not in GROUP_ACTIONS:
        return HttpResponseBadRequest(
            _("Unknown action %(action)r: choose one of %(actions)s.")
            % {"action": name, "actions": ", ".join(GROUP_ACTIONS)}
        )
    action = ACTIONS[name]
    if not action.allowed(model_admin, request, None):
        raise PermissionDenied
    window, span = chosen_window(request.POST, WINDOWS, DEFAULT_WINDOW)
    if span is None:
        window = DEFAULT_WINDOW
    try:
        key = GroupKey.decode(request.POST.get("group", ""))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    ids = key.job_ids()
    if action.confirm and request.POST.get("post") != "yes":
        context = {
            **model_admin.admin_site.each_context(request),
            "title": _("Delete a failure group: are you sure?"),
            "opts": model_admin.opts,
            "action": action,
            "key": key,
            "group": request.POST["group"],
            "count": len(ids),
            "window": window,
            "media": model_admin.media,
        }
        return TemplateResponse(
            request, "admin/leasequeue/job/failure_group_confirmation.html", context
        )
    run_action_in_batches(model_admin, request, action, ids)
    page = reverse(f"{model_admin.admin_site.name}:leasequeue_job_failures")
    return HttpResponseRedirect(f"{page}?{urlencode({'window': window})}")
