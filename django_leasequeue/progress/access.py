"""Who may watch a job's progress: staff with the view permission, or a page holding a signed,
expiring token for that one job. The same rule serves the websocket and the JSON view.

The template tag embeds ``job_token(job.id)``; a token is accepted for that job id only, until
it is ``LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE`` seconds old (default one day).
"""

from typing import Any
from uuid import UUID

from django.conf import settings
from django.core import signing

VIEW_PERMISSION = "leasequeue.view_job"
# The request header the progress bar's polling sends its token in (kept out of access logs).
TOKEN_HEADER = "X-Leasequeue-Token"

_SALT = "django_leasequeue.progress"
_DEFAULT_MAX_AGE_SECONDS = 24 * 60 * 60


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALT)


def max_age_seconds() -> int:
    return getattr(settings, "LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE", _DEFAULT_MAX_AGE_SECONDS)


def job_token(job_id: UUID | str) -> str:
    """A token that grants read access to this job's progress."""
    return _signer().sign(str(UUID(str(job_id))))


def token_allows(token: str | None, job_id: UUID | str) -> bool:
    """True when ``token`` is ours, unexpired, and was issued for exactly this job."""
    if not token:
        return False
    try:
        signed_id = _signer().unsign(token, max_age=max_age_seconds())
    except (signing.BadSignature, ValueError):  # expired, forged, or signed without a time
        return False
    return signed_id == str(UUID(str(job_id)))


def token_expires_at(token: str) -> float | None:
    """When a token ``token_allows`` accepted stops being valid (Unix time), or None."""
    signer = _signer()
    try:
        value = signing.Signer.unsign(signer, token)  # the signature only, not the age
        timestamp = signing.b62_decode(value.rsplit(signer.sep, 1)[1])
    except (signing.BadSignature, ValueError, IndexError):
        return None
    return timestamp + max_age_seconds()


def can_view_job(user: Any, job_id: UUID | str, token: str | None) -> bool:
    """Staff with the view permission, or anyone holding a valid token for this job.

    Sync: ``has_perm`` may query the database (call through ``database_sync_to_async``).
    """
    if token_allows(token, job_id):
        return True
    return bool(
        user is not None and user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION)
    )
