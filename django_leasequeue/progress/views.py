"""The JSON status view: what the progress bar polls when websockets are unavailable."""

from uuid import UUID

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from django_leasequeue.progress.access import TOKEN_HEADER, can_view_job
from django_leasequeue.progress.state import load_job_state


@never_cache
@require_safe
def job_status(request: HttpRequest, job_id: UUID) -> JsonResponse:
    """The job's state (``progress.state``); the websocket's authorisation, token in ``?token=``.

    Refuses before looking the job up, so that nobody learns which job ids exist.
    """
    token = request.headers.get(TOKEN_HEADER) or request.GET.get("token")
    if not can_view_job(request.user, job_id, token):
        return JsonResponse({"error": "forbidden"}, status=403)
    state = load_job_state(job_id)
    if state is None:
        return JsonResponse({"error": "not found"}, status=404)
    return JsonResponse(state)
