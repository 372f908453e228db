"""People who look at a job's progress: staff with and without the permission, and tokens."""

import time

from django.contrib.auth.models import Permission, User
from django.core import signing
from django.test import Client

from django_leasequeue.progress import access


def staff_user(*, can_view: bool, username: str = "staff") -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    if can_view:
        user.user_permissions.add(Permission.objects.get(codename="view_job"))
    return user


def session_cookie(user: User) -> bytes:
    """A ``cookie`` header value logging ``user`` in, as a browser would send it."""
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def aged_token(job_id, age_seconds: float) -> str:
    """A genuine token for ``job_id``, signed as if ``age_seconds`` ago."""
    signer = signing.TimestampSigner(salt=access._SALT)
    signed_at = signing.b62_encode(int(time.time() - age_seconds))
    return signing.Signer(salt=access._SALT).sign(f"{job_id}{signer.sep}{signed_at}")


def forged_token(job_id) -> str:
    """A well-formed token for ``job_id`` signed with a key the server does not have."""
    return signing.TimestampSigner(key="not-the-secret-key", salt=access._SALT).sign(str(job_id))
