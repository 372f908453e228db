"""Who may watch a job's progress: the same rule for the websocket and the JSON view."""

from typing import Any
from uuid import UUID

from django_leasequeue.tokens import token_allows

VIEW_PERMISSION = "leasequeue.view_job"


def can_view_job(user: Any, job_id: UUID | str, token: str | None) -> bool:
    """Staff with the view permission, or anyone holding a valid token for this job.

    Sync: ``has_perm`` may query the database (call through ``database_sync_to_async``).
    """
    if token_allows(token, job_id):
        return True
    return bool(
        user is not None and user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION)
    )
