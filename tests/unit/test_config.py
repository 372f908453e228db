"""Options, system checks, the query file and ids: no database needed."""

import uuid

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_leasequeue.checks import check_backend
from django_leasequeue.conf import BackendConfig
from django_leasequeue.ids import uuid7
from django_leasequeue.sql import QUERIES, load_queries


def test_defaults_are_documented_and_sane():
    opts = BackendConfig.from_options({})
    assert opts.lease_seconds == 30 and opts.heartbeat_seconds * 2 <= opts.lease_seconds


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lease_second": 5}, r"Unknown leasequeue OPTIONS \['lease_second'\]"),
        ({"lease_seconds": "30"}, r"OPTIONS\['lease_seconds'\] = '30' is invalid"),
        ({"max_attempts": 0}, r"expected a positive int"),
        ({"max_attempts": 2.5}, r"expected a positive int"),
        ({"prepared_statements": 1}, r"expected True or False"),
        ({"key_prefix": ""}, r"expected a non-empty string"),
        ({"lease_seconds": 10, "heartbeat_seconds": 6}, r"at most half of lease_seconds"),
        (
            {"metrics_port": "9100"},
            r"OPTIONS\['metrics_port'\] = '9100' is invalid: expected a positive int",
        ),
        ({"metrics_port": 0}, r"expected a positive int"),
        (
            {"metrics_token": ""},
            r"OPTIONS\['metrics_token'\] = '' is invalid: expected a non-empty",
        ),
        ({"metrics_token": 42}, r"expected a non-empty string"),
        ({"worker_retention_seconds": 0}, r"expected a positive float"),
    ],
)
def test_bad_options_are_refused_with_the_reason(options, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        BackendConfig.from_options(options)


def test_metrics_options_default_to_off_and_take_their_values():
    assert BackendConfig.from_options({}).metrics_token is None
    assert BackendConfig.from_options({}).metrics_port is None
    opts = BackendConfig.from_options({"metrics_token": "t0k", "metrics_port": 9300})
    assert (opts.metrics_token, opts.metrics_port) == ("t0k", 9300)
    assert BackendConfig.from_options({}).worker_retention_seconds == 86400


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


def test_redis_alias_may_be_none_for_polling_only():
    assert BackendConfig.from_options({"redis_alias": None}).redis_alias is None


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


def test_every_query_has_a_name_and_a_description():
    assert {
        "enqueue",
        "claim_by_ids",
        "claim_batch",
        "heartbeat",
        "complete",
        "fail",
        "hand_back",
        "cancel",
        "recover_expired",
        "progress",
        "checkpoint",
        "lock_lease",
    } <= set(QUERIES)
    for query in QUERIES.values():
        assert query.description and not query.description.startswith("name:")
        assert query.sql and "-- name:" not in query.sql


def test_a_query_defined_twice_is_refused():
    text = "-- name: a\n-- first\nSELECT 1;\n-- name: a\n-- again\nSELECT 2;\n"
    with pytest.raises(ValueError, match="defined twice"):
        load_queries(text)


def test_uuid7_is_time_ordered_and_versioned():
    ids = [uuid7() for _ in range(1000)]
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert [i.int >> 80 for i in ids] == sorted(i.int >> 80 for i in ids)
    assert len(set(ids)) == 1000


def test_uuid7_strs_are_valid_time_ordered_uuid7s():
    from django_leasequeue.ids import uuid7_strs

    texts = uuid7_strs(1000) + uuid7_strs(1) + uuid7_strs(999)
    ids = [uuid.UUID(text) for text in texts]
    assert [str(i) for i in ids] == texts
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert [i.int >> 80 for i in ids] == sorted(i.int >> 80 for i in ids)
    assert len(set(texts)) == 2000


def test_dumps_is_strict_compact_json():
    import json

    from django_leasequeue.jsonargs import dumps

    value = {"a": [1, (2, 3)], "b": "é", "c": None, "d": 1.5}
    assert dumps(value) == json.dumps(value, separators=(",", ":"))
    for bad in ([float("nan")], [float("inf")], [object()], [b"x"]):
        with pytest.raises((TypeError, ValueError)):
            dumps(bad)
    circular: list = []
    circular.append(circular)
    with pytest.raises(ValueError, match="circular"):
        dumps(circular)


@pytest.mark.parametrize(
    "args",
    [(1, "a", None, True, 2.5), ((1, 2), "x"), ({"k": (1,)},), ("[not a list]", "{}"), ()],
)
def test_decoded_arguments_are_what_json_gives_back(args):
    import json

    from django_leasequeue.jsonargs import decoded, dumps

    text = dumps(list(args))
    assert decoded(args, text) == json.loads(text)
    assert [type(v) for v in decoded(args, text)] == [type(v) for v in json.loads(text)]


def test_max_argument_bytes_is_a_positive_whole_number_or_none():
    assert BackendConfig.from_options({"max_argument_bytes": None}).max_argument_bytes is None
    assert BackendConfig.from_options({"max_argument_bytes": 10}).max_argument_bytes == 10
    for bad in (0, -1, 1.5, "1MB"):
        with pytest.raises(ImproperlyConfigured, match="max_argument_bytes"):
            BackendConfig.from_options({"max_argument_bytes": bad})
