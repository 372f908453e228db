"""The JSON status views: what a progress bar polls when websockets are unavailable."""

from uuid import UUID

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from django_leasequeue.progress.access import TOKEN_HEADER, can_view_job, can_view_workflow
from django_leasequeue.progress.state import load_job_state
from django_leasequeue.progress.workflow_state import load_workflow_state


def _token(request: HttpRequest) -> str | None:
    return request.headers.get(TOKEN_HEADER) or request.GET.get("token")


@never_cache
@require_safe
def job_status(request: HttpRequest, job_id: UUID) -> JsonResponse:
    """The job's state (``progress.state``); the websocket's authorisation, token in ``?token=``.

    Refuses before looking the job up, so that nobody learns which job ids exist.
    """
    if not can_view_job(request.user, job_id, _token(request)):
        return JsonResponse({"error": "forbidden"}, status=403)
    state = load_job_state(job_id)
    if state is None:
        return JsonResponse({"error": "not found"}, status=404)
    return JsonResponse(state)


@never_cache
@require_safe
def workflow_status(request: HttpRequest, workflow_id: UUID) -> JsonResponse:
    """The workflow's state (``progress.workflow_state``), under the same rules as a job's."""
    if not can_view_workflow(request.user, workflow_id, _token(request)):
        return JsonResponse({"error": "forbidden"}, status=403)
    state = load_workflow_state(workflow_id)
    if state is None:
        return JsonResponse({"error": "not found"}, status=404)
    return JsonResponse(state)
