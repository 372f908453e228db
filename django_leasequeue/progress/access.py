"""Who may watch progress: staff with the view permission, or a page holding a signed,
expiring token for that one job (or workflow). The same rule serves the websockets and the JSON
views.

The template tag embeds ``job_token(job.id)`` (``workflow_token(workflow.id)`` for a workflow's
bar); a token is accepted for that id and that kind only, until it is
``LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE`` seconds old (default one day). Jobs and workflows sign
with different salts, so a job's token never opens a workflow, nor the other way round.
"""

from typing import Any, Literal
from uuid import UUID

from django.conf import settings
from django.core import signing

Kind = Literal["job", "workflow"]

VIEW_PERMISSION = "leasequeue.view_job"
WORKFLOW_VIEW_PERMISSION = "leasequeue.view_workflowrun"
# The request header the progress bar's polling sends its token in (kept out of access logs).
TOKEN_HEADER = "X-Leasequeue-Token"

_SALT = "django_leasequeue.progress"
_SALTS: dict[Kind, str] = {"job": _SALT, "workflow": f"{_SALT}.workflow"}
_DEFAULT_MAX_AGE_SECONDS = 24 * 60 * 60


def _signer(kind: Kind = "job") -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALTS[kind])


def max_age_seconds() -> int:
    return getattr(settings, "LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE", _DEFAULT_MAX_AGE_SECONDS)


def job_token(job_id: UUID | str) -> str:
    """A token that grants read access to this job's progress."""
    return _signer().sign(str(UUID(str(job_id))))


def workflow_token(workflow_id: UUID | str) -> str:
    """A token that grants read access to this workflow's progress (not to its steps')."""
    return _signer("workflow").sign(str(UUID(str(workflow_id))))


def token_allows(token: str | None, object_id: UUID | str, kind: Kind = "job") -> bool:
    """True when ``token`` is ours, unexpired, and was issued for exactly this job (or
    workflow, with ``kind="workflow"``)."""
    if not token:
        return False
    try:
        signed_id = _signer(kind).unsign(token, max_age=max_age_seconds())
    except (signing.BadSignature, ValueError):  # expired, forged, or signed without a time
        return False
    return signed_id == str(UUID(str(object_id)))


def token_expires_at(token: str, kind: Kind = "job") -> float | None:
    """When a token ``token_allows`` accepted stops being valid (Unix time), or None."""
    signer = _signer(kind)
    try:
        value = signing.Signer.unsign(signer, token)  # the signature only, not the age
        timestamp = signing.b62_decode(value.rsplit(signer.sep, 1)[1])
    except (signing.BadSignature, ValueError, IndexError):
        return None
    return timestamp + max_age_seconds()


def _staff_with(user: Any, permission: str) -> bool:
    return bool(user is not None and user.is_active and user.is_staff and user.has_perm(permission))


def can_view_job(user: Any, job_id: UUID | str, token: str | None) -> bool:
    """Staff with the view permission, or anyone holding a valid token for this job.

    Sync: ``has_perm`` may query the database (call through ``database_sync_to_async``).
    """
    return token_allows(token, job_id) or _staff_with(user, VIEW_PERMISSION)


def can_view_workflow(user: Any, workflow_id: UUID | str, token: str | None) -> bool:
    """Staff with the workflows' view permission, or anyone holding a valid token for this
    workflow. Sync, like ``can_view_job``."""
    return token_allows(token, workflow_id, "workflow") or _staff_with(
        user, WORKFLOW_VIEW_PERMISSION
    )
