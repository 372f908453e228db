from importlib.metadata import entry_points

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django_redis import get_redis_connection

from django_leasequeue.tasks_framework import task_backends
from tests.support.permissions import APP_LABELS

pytest_plugins = ["tests.support.leftovers", "tests.support.flush"]
# The package's pytest plugin (the ``leasequeue`` fixture) comes with its installation (its
# pytest11 entry point); a checkout not installed again since the plugin was added has none.
if "django_leasequeue.pytest_plugin" not in {
    point.value for point in entry_points(group="pytest11")
}:
    pytest_plugins.append("django_leasequeue.pytest_plugin")


@pytest.fixture
def backend():
    return task_backends["default"]


@pytest.fixture
def redis_client(backend):
    client = get_redis_connection(backend.config.redis_alias)
    keys = client.keys(f"{backend.config.key_prefix}:*")
    if keys:
        client.delete(*keys)
    yield client
    keys = client.keys(f"{backend.config.key_prefix}:*")
    if keys:
        client.delete(*keys)


@pytest.fixture
def staff_client(django_user_model):
    """Makes a client logged in as staff (not superuser) with the given leasequeue permissions."""

    def make(*codenames: str) -> Client:
        user = django_user_model.objects.create_user(
            f"staff-{'-'.join(codenames) or 'none'}", password="pw", is_staff=True
        )
        user.user_permissions.set(
            Permission.objects.filter(
                content_type__app_label__in=APP_LABELS, codename__in=codenames
            )
        )
        client = Client()
        client.force_login(user)
        return client

    return make
