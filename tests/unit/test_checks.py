"""The system checks (``checks.py``) on the database and Redis settings."""

import pytest
from django.test import override_settings

from django_leasequeue.checks import check_backend
from django_leasequeue.conf import BackendConfig


@pytest.mark.django_db
def test_checks_pass_on_the_test_settings():
    assert check_backend("default", BackendConfig.from_options({})) == []


def test_check_e001_refuses_a_database_that_is_not_postgresql():
    databases = {
        "default": {"ENGINE": "django.db.backends.postgresql", "NAME": "x"},
        "lite": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
    }
    with override_settings(DATABASES=databases):
        from django.db import connections

        connections.settings = connections.configure_settings(databases)
        try:
            ids = [m.id for m in check_backend("t", BackendConfig(database="lite"))]
        finally:
            del connections.settings
    assert ids == ["leasequeue.E001"]


def test_check_e002_unknown_database_alias():
    ids = [m.id for m in check_backend("t", BackendConfig(database="nope"))]
    assert ids == ["leasequeue.E002"]


def test_check_e003_redis_alias_missing_or_not_django_redis():
    assert [m.id for m in check_backend("t", BackendConfig(redis_alias="nope"))] == [
        "leasequeue.E003"
    ]
    caches = {"locmem": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    with override_settings(CACHES=caches):
        messages = check_backend("t", BackendConfig(redis_alias="locmem"))
    assert [m.id for m in messages] == ["leasequeue.E003"]


def test_check_w001_redis_without_connect_timeout():
    caches = {"r": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": "redis://x"}}
    with override_settings(CACHES=caches):
        messages = check_backend("t", BackendConfig(redis_alias="r"))
    assert [m.id for m in messages] == ["leasequeue.W001"]


@pytest.mark.django_db
def test_check_e007_metrics_port_must_be_a_tcp_port():
    def e007(port: int) -> list[str]:
        config = BackendConfig.from_options({"metrics_port": port})
        return [m.msg for m in check_backend("default", config) if m.id == "leasequeue.E007"]

    assert e007(1) == e007(9100) == e007(65535) == []
    assert e007(70000) == [
        "TASKS['default'] OPTIONS metrics_port 70000 is not a TCP port (1 to 65535)."
    ]
    assert e007(65536) != []
