"""The backend's OPTIONS (``conf.py``): defaults, and bad values refused with the reason."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_leasequeue.conf import BackendConfig


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


def test_redis_alias_may_be_none_for_polling_only():
    assert BackendConfig.from_options({"redis_alias": None}).redis_alias is None


def test_max_argument_bytes_is_a_positive_whole_number_or_none():
    assert BackendConfig.from_options({"max_argument_bytes": None}).max_argument_bytes is None
    assert BackendConfig.from_options({"max_argument_bytes": 10}).max_argument_bytes == 10
    for bad in (0, -1, 1.5, "1MB"):
        with pytest.raises(ImproperlyConfigured, match="max_argument_bytes"):
            BackendConfig.from_options({"max_argument_bytes": bad})
