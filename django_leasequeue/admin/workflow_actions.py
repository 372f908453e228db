"""The operator's buttons on a workflow's page: Cancel (after a confirmation page) and Retry
failed steps, each needing its own permission (``cancel_workflow``, ``retry_workflow``).

Staff without the permission see no button, and a request they make anyway is refused with a
message, changing nothing. Both run through ``operations``, on the job database: one
transaction each, race-safe with running workers. What they did is said in a message and kept
in the workflow's history.
"""

from typing import Any

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from django_leasequeue import operations
from django_leasequeue.choices import JobStatus, WorkflowStatus
from django_leasequeue.conf import job_database
from django_leasequeue.models import WorkflowRun

CANCEL_PERMISSION = "leasequeue.cancel_workflow"
RETRY_PERMISSION = "leasequeue.retry_workflow"


def buttons(
    model_admin: ModelAdmin, request: HttpRequest, workflow: WorkflowRun
) -> list[dict[str, Any]]:
    """The buttons this operator may use on this workflow now."""
    found = []
    if workflow.status == WorkflowStatus.RUNNING and request.user.has_perm(CANCEL_PERMISSION):
        found.append({"name": "cancel", "label": _("Cancel"), "confirm": True})
    if (
        workflow.steps_failed  # failed or cancelled: the exact question only when it may be yes
        and request.user.has_perm(RETRY_PERMISSION)
        and workflow.steps.using(job_database()).filter(status=JobStatus.FAILED).exists()
    ):
        found.append({"name": "retry", "label": _("Retry failed steps"), "confirm": False})
    for button in found:
        button["url"] = reverse(
            f"{model_admin.admin_site.name}:leasequeue_workflowrun_{button['name']}",
            args=[workflow.pk],
        )
    return found


def _viewable(model_admin: ModelAdmin, request: HttpRequest, object_id: str) -> Any:
    workflow = model_admin.get_object(request, unquote(object_id))  # None: malformed or unknown
    if workflow is None:
        raise Http404
    if not model_admin.has_view_permission(request, workflow):
        raise PermissionDenied
    return workflow


def _back(model_admin: ModelAdmin, workflow: WorkflowRun) -> HttpResponseRedirect:
    return HttpResponseRedirect(
        reverse(f"{model_admin.admin_site.name}:leasequeue_workflowrun_change", args=[workflow.pk])
    )


def _refused(
    model_admin: ModelAdmin, request: HttpRequest, workflow: WorkflowRun, permission: str
) -> HttpResponse:
    model_admin.message_user(
        request,
        _("Refused: this needs the %(permission)s permission, which you do not have.")
        % {"permission": permission},
        messages.ERROR,
    )
    return _back(model_admin, workflow)


def cancel_view(model_admin: ModelAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """GET: confirm; POST: cancel the steps not started, ask the running ones to stop."""
    workflow = _viewable(model_admin, request, object_id)
    if not request.user.has_perm(CANCEL_PERMISSION):
        return _refused(model_admin, request, workflow, CANCEL_PERMISSION)
    if request.method == "GET":
        return TemplateResponse(
            request,
            "admin/leasequeue/workflowrun/cancel_confirmation.html",
            {
                **model_admin.admin_site.each_context(request),
                "title": _("Cancel workflow %s?") % workflow,
                "opts": model_admin.opts,
                "workflow": workflow,
                "media": model_admin.media,
            },
        )
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    if workflow.status != WorkflowStatus.RUNNING:
        model_admin.message_user(
            request,
            _("This workflow has already ended (%s): nothing to cancel.")
            % WorkflowStatus(workflow.status).label,
            messages.WARNING,
        )
        return _back(model_admin, workflow)
    outcome = operations.cancel_workflow(workflow.pk, job_database())
    message = _("Workflow cancelled: %(steps)s, %(running)s.") % {
        "steps": ngettext(
            "%(count)d step cancelled", "%(count)d steps cancelled", outcome["cancelled"]
        )
        % {"count": outcome["cancelled"]},
        "running": ngettext(
            "%(count)d running step asked to stop",
            "%(count)d running steps asked to stop",
            outcome["cancel_requested"],
        )
        % {"count": outcome["cancel_requested"]},
    }
    model_admin.log_change(request, workflow, message)
    model_admin.message_user(request, message, messages.SUCCESS)
    return _back(model_admin, workflow)


def retry_view(model_admin: ModelAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """POST: queue the failed steps again; the steps they had cancelled wait for them."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    workflow = _viewable(model_admin, request, object_id)
    if not request.user.has_perm(RETRY_PERMISSION):
        return _refused(model_admin, request, workflow, RETRY_PERMISSION)
    report = operations.retry_failed_steps(workflow.pk, job_database())
    message = _("Retry failed steps: %s.") % report.message()
    if report.changed_count:
        model_admin.log_change(request, workflow, message)
    level = messages.SUCCESS if report.changed_count else messages.WARNING
    model_admin.message_user(request, message, level)
    return _back(model_admin, workflow)
