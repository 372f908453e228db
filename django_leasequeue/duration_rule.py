"""The one rule for every duration a user gives (``timeout``, ``backoff_seconds``,
``expires_after``, ``unique_for``, a snooze): a number of seconds (not a bool) or a timedelta,
finite, positive (a snooze may be 0), whose end, counted from now, is a moment a job row can
hold and a worker can read back.

PostgreSQL's ``timestamptz`` reaches the year 294276, Python's ``datetime`` only 9999: a later
moment could be written but never read back (psycopg refuses to decode it), so the last moment a
duration may reach is Python's. Callers raise their own exception with the option's name.
"""

import math
from datetime import UTC, datetime, timedelta

from django_leasequeue.shown import shown

# A day short of Python's last moment, so that no time zone shift or clock skew between this
# process and PostgreSQL can carry a stored moment past it.
LATEST_MOMENT = datetime(9999, 12, 30, tzinfo=UTC)


def to_seconds(value: object, *, zero_allowed: bool = False) -> float:
    """``value`` in seconds; ValueError saying why it is no duration a job can hold."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int too large for a float
            end_after(datetime.now(UTC), math.inf, value)
            raise  # not reached: no moment is that far
    else:
        raise ValueError(f"must be a number of seconds or a timedelta, not {_shown(value)}")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero_allowed):
        wanted = "finite, 0 seconds or more" if zero_allowed else "finite, above 0 seconds"
        raise ValueError(f"must be a positive duration ({wanted}), not {_shown(value)}")
    end_after(datetime.now(UTC), seconds, value)
    return seconds


def end_after(start: datetime, seconds: float, given: object = None) -> datetime:
    """``start`` plus ``seconds``; ValueError when that is past the last moment a row holds."""
    room = (LATEST_MOMENT - start).total_seconds()
    if not seconds <= room:  # inf and nan too
        shown = _shown(seconds if given is None else given)
        raise ValueError(
            f"is too long: {shown} from {start:%Y-%m-%d} ends after {LATEST_MOMENT:%Y-%m-%d}, "
            "the last day a job row can hold"
        )
    return start + timedelta(seconds=seconds)


def _shown(value: object) -> str:
    """A duration as a message shows it: seconds as a number, a timedelta as one."""
    if isinstance(value, timedelta):
        text = f"timedelta({value})"
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            text = f"{float(value):g} seconds"
        except OverflowError:
            text = f"{str(value)[:20]}... seconds"
    else:
        text = shown(value)
    return text
