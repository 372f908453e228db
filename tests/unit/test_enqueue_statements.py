"""Which statement inserts a lone plain job: the function with a plan cached per session only
where Django keeps sessions across requests (``backend.sessions_outlive_requests``)."""

import pytest

from django_leasequeue.enqueue.service import sessions_outlive_requests


@pytest.mark.parametrize(
    ("conn_max_age", "options", "outlive"),
    [
        (0, {}, False),  # Django's default: a connection per request
        (60, {}, True),
        (None, {}, True),  # unlimited persistent connections
        (0, {"pool": True}, True),  # Django's pool (it refuses CONN_MAX_AGE)
        (0, {"pool": {"min_size": 2}}, True),
        (0, {"pool": False}, False),
    ],
)
def test_sessions_outlive_requests_with_persistent_connections_or_a_pool(
    conn_max_age, options, outlive
):
    settings_dict = {"CONN_MAX_AGE": conn_max_age, "OPTIONS": options}
    assert sessions_outlive_requests(settings_dict) is outlive
