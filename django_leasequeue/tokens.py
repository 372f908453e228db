"""Signed, expiring tokens that let one page watch one job without a staff login.

The template tag embeds ``job_token(job.id)``; the websocket consumer and the JSON status view
accept it for that job id only, until it is ``LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE`` seconds old
(default one day).
"""

from uuid import UUID

from django.conf import settings
from django.core import signing

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
    except signing.BadSignature:  # also SignatureExpired
        return False
    return signed_id == str(UUID(str(job_id)))
