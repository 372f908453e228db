import pytest
from django_redis import get_redis_connection

from django_leasequeue.tasks_framework import task_backends


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
