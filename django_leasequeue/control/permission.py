"""The permission to pause and resume queues: ``django_leasequeue.pause_queue``.

Django names a permission after its content type's app label, and this app's label is
``leasequeue`` (every table and migration hangs on it). The permission the documented API names
lives instead on a content type of its own, ``django_leasequeue | queue``, which no model backs:
``ensure_pause_permission`` creates both after every ``migrate`` (and after the flush of a test
database), and moves a permission made by an earlier version (``leasequeue.pause_queue``, on the
paused-queue model) with its grants.

``remove_stale_contenttypes --include-stale-apps`` lists this content type as stale; deleting it
deletes the grants, and the next ``migrate`` creates the permission again (ungranted).
"""

from typing import Any

PERMISSION = "django_leasequeue.pause_queue"
APP_LABEL, CODENAME = PERMISSION.split(".")
CONTENT_TYPE_MODEL = "queue"
NAME = "Can pause and resume queues"


def ensure_pause_permission(using: str = "default", **kwargs: Any) -> None:
    """The permission exists (a ``post_migrate`` receiver; idempotent)."""
    from django.apps import apps

    needed = ("django.contrib.auth", "django.contrib.contenttypes")
    if not all(apps.is_installed(app) for app in needed):
        return
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    content_type, _ = ContentType.objects.using(using).get_or_create(
        app_label=APP_LABEL, model=CONTENT_TYPE_MODEL
    )
    earlier = Permission.objects.using(using).filter(
        content_type__app_label="leasequeue", codename=CODENAME
    )
    current = Permission.objects.using(using).filter(content_type=content_type, codename=CODENAME)
    if not current.exists() and earlier.exists():
        earlier.update(content_type=content_type)  # keeps its id, so its grants
        return
    Permission.objects.using(using).get_or_create(
        content_type=content_type, codename=CODENAME, defaults={"name": NAME}
    )
