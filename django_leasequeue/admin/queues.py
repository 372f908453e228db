"""Pausing and resuming queues from the job list's queue summary.

The summary shows each queue's pause (with its reason and since when); staff with the
``django_leasequeue.pause_queue`` permission (``control/permission.py``) get a Pause or Resume
button on its row. Both buttons post to the views here, which run ``backend.pause_queue`` /
``resume_queue`` (``control/pausing.py``).
"""

from typing import Any

from django.contrib import messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.utils import timezone
from django.utils.translation import gettext as _

from django_leasequeue.admin import display as show
from django_leasequeue.backend import LeaseQueueBackend
from django_leasequeue.conf import lease_queue_backends
from django_leasequeue.control.pausing import REASON_MAX_LENGTH
from django_leasequeue.control.permission import PERMISSION
from django_leasequeue.exceptions import PauseFailed
from django_leasequeue.models import PausedQueue
from django_leasequeue.sql import queue_control as queue_control_sql
from django_leasequeue.sql.executor import execute


def may_pause(request: HttpRequest) -> bool:
    return request.user.has_perm(PERMISSION)


def pause_form_context(request: HttpRequest) -> dict[str, Any]:
    """What the summary's Pause form needs: whether to show it, and the reason's limit (the one
    ``pause_queue`` enforces, so the form and its POST refuse the same reasons)."""
    return {"may_pause": may_pause(request), "pause_reason_max_length": REASON_MAX_LENGTH}


def with_pauses(summary: list[dict[str, Any]], database: str) -> list[dict[str, Any]]:
    """The summary's rows, each told whether its queue is paused (``paused``: the reason and
    since when, or None), with a row for each paused queue that has no job to count."""
    paused = execute(queue_control_sql.paused_queues(), database)
    rows = {row["queue_name"]: row for row in summary}
    for name in paused.keys() - rows.keys():
        rows[name] = {"queue_name": name, "oldest_due": "—", "finished_last_minute": 0}
        rows[name].update(dict.fromkeys(("queued", "running", "retrying", "failed"), 0))
    now = timezone.now()
    for name, row in rows.items():
        row["paused"] = paused.get(name)
        if row["paused"] is not None:
            row["paused"]["paused_for"] = show.duration(now - row["paused"]["paused_at"])
            row["backlogged"] = False  # waiting is what a paused queue's jobs are meant to do
    return [rows[name] for name in sorted(rows)]


def _backend_for(queue: str) -> LeaseQueueBackend:
    """The lease-queue backend that serves ``queue`` (any one does: pauses are per database)."""
    backends = lease_queue_backends()
    for backend in backends:
        if not backend.queues or queue in backend.queues:
            return backend
    return backends[0]


def _log(request: HttpRequest, queue: str, message: str) -> None:
    """The admin's history of the pause (on the paused-queue table, keyed by queue name)."""
    # An admin view's user is a logged-in staff user: its pk is set.
    LogEntry.objects.log_actions(  # type: ignore[call-overload]
        user_id=request.user.pk,
        queryset=[PausedQueue(queue_name=queue)],
        action_flag=CHANGE,
        change_message=message,
        single_object=True,
    )


def pause_view(request: HttpRequest, changelist_url: str) -> HttpResponse:
    """POST ``queue`` (and an optional ``reason``): pause it for every worker."""
    queue, response = _queue_of(request, changelist_url)
    if response is not None:
        return response
    reason = request.POST.get("reason", "").strip()
    try:
        newly = _backend_for(queue).pause_queue(queue, reason)
    except (ValueError, PauseFailed) as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(changelist_url)
    if newly:
        messages.success(request, _("Queue “%s” paused: no worker claims its jobs.") % queue)
        _log(request, queue, f"Paused queue {queue}" + (f": {reason}" if reason else ""))
    else:
        messages.info(request, _("Queue “%s” was paused already; reason updated.") % queue)
    return HttpResponseRedirect(changelist_url)


def resume_view(request: HttpRequest, changelist_url: str) -> HttpResponse:
    """POST ``queue``: resume it, waking workers for its due jobs."""
    queue, response = _queue_of(request, changelist_url)
    if response is not None:
        return response
    try:
        resumed = _backend_for(queue).resume_queue(queue)
    except ValueError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(changelist_url)
    if resumed:
        messages.success(request, _("Queue “%s” resumed.") % queue)
        _log(request, queue, f"Resumed queue {queue}")
    else:
        messages.info(request, _("Queue “%s” was not paused.") % queue)
    return HttpResponseRedirect(changelist_url)


def _queue_of(request: HttpRequest, changelist_url: str) -> tuple[str, HttpResponse | None]:
    """The posted queue name, or the response refusing the request."""
    if request.method != "POST":
        return "", HttpResponseNotAllowed(["POST"])
    if not may_pause(request):
        raise PermissionDenied
    queue = request.POST.get("queue", "")
    if not queue:
        messages.error(request, _("No queue was named."))
        return "", HttpResponseRedirect(changelist_url)
    return queue, None
