import pytest
from django.tasks import task_backends
from django_redis import get_redis_connection


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
