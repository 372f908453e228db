"""The one duration formatter of the management commands (status ages, prunejobs' time left)."""

import pytest

from django_leasequeue.human_duration import duration


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (-2.0, "0 s"),  # a clock a little ahead of the database's
        (59.4, "59 s"),
        (59.6, "1 min 0 s"),
        (3599, "59 min 59 s"),
        (7_830, "2 h 10 min"),
    ],
)
def test_a_duration_is_whole_seconds_in_its_two_largest_units(seconds, shown):
    assert duration(seconds) == shown
