"""When a schedule ticks: a cron expression in a time zone, or a fixed interval.

Cron is evaluated by ``cronsim``, which follows cron's daylight-saving rules: a time that does
not exist on the spring-forward day runs once, at the first minute after the gap; a time that
occurs twice on the fall-back day runs once, at its first occurrence. Intervals tick at whole
multiples of the interval since the Unix epoch (UTC), so every process computes the same ticks
without sharing any state but the database clock.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cron_descriptor import get_description
from cronsim import CronSim, CronSimError

from django_leasequeue.duration_rule import to_seconds
from django_leasequeue.exceptions import InvalidSchedule

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The shortest ``every``: the scheduler checks about once a second (so a shorter interval would
# not tick on time anyway), and each tick is a job row and a transaction of its own
# (docs/periodic-jobs.md).
MIN_INTERVAL = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class CronTiming:
    expression: str
    timezone: ZoneInfo

    def __post_init__(self) -> None:
        if len(self.expression.split()) != 5:
            raise InvalidSchedule(
                f"cron {self.expression!r} must have five fields "
                "(minute hour day-of-month month day-of-week)."
            )
        try:
            CronSim(self.expression, datetime.now(self.timezone))
        except CronSimError as exc:
            raise InvalidSchedule(f"cron {self.expression!r} is invalid: {exc}.") from None

    def ticks_after(self, moment: datetime) -> Iterator[datetime]:
        """Ticks strictly after ``moment``, ascending (aware datetimes in ``timezone``)."""
        return CronSim(self.expression, moment.astimezone(self.timezone))

    def ticks_before(self, moment: datetime) -> Iterator[datetime]:
        """Ticks strictly before ``moment``, descending."""
        return CronSim(self.expression, moment.astimezone(self.timezone), reverse=True)

    def describe(self) -> str:
        words = get_description(self.expression)
        return f"{words} ({self.timezone.key})"


@dataclass(frozen=True, slots=True)
class IntervalTiming:
    interval: timedelta

    def __post_init__(self) -> None:
        if not isinstance(self.interval, timedelta):
            raise InvalidSchedule(f"every must be a timedelta, not {self.interval!r}.")
        if self.interval < MIN_INTERVAL:
            raise InvalidSchedule(
                f"every must be at least 1 second, not {self.interval}: the "
                "scheduler checks about once a second, and each tick is a job of its own."
            )
        try:  # the one rule for durations: a next tick a job row can hold
            to_seconds(self.interval)
        except ValueError as exc:
            raise InvalidSchedule(f"every {exc}.") from None

    def ticks_after(self, moment: datetime) -> Iterator[datetime]:
        tick = _EPOCH + (moment - _EPOCH) // self.interval * self.interval
        while True:
            tick += self.interval
            yield tick

    def ticks_before(self, moment: datetime) -> Iterator[datetime]:
        steps, remainder = divmod(moment - _EPOCH, self.interval)
        tick = _EPOCH + steps * self.interval
        if not remainder:
            tick -= self.interval
        while True:
            yield tick
            tick -= self.interval

    def describe(self) -> str:
        return f"Every {_duration(self.interval)}"


Timing = CronTiming | IntervalTiming


def timing_of(
    cron: str | None, cron_timezone: str | None, every: timedelta | None, default_timezone: str
) -> Timing:
    """The timing a task declares; raises InvalidSchedule saying what is wrong."""
    if cron is not None and every is not None:
        raise InvalidSchedule("give cron or every, not both.")
    if cron is not None:
        if not isinstance(cron, str):
            raise InvalidSchedule(f"cron must be a string, not {cron!r}.")
        return CronTiming(cron, _zone(cron_timezone or default_timezone))
    if cron_timezone is not None:
        raise InvalidSchedule("cron_timezone is only meaningful with cron.")
    if every is None:
        raise InvalidSchedule("give cron or every.")
    return IntervalTiming(every)


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise InvalidSchedule(f"cron_timezone {name!r} is not a known time zone.") from None


def _duration(interval: timedelta) -> str:
    """``1 second``, ``90 seconds``, ``5 minutes``, ``2 hours``, ``1 day``: the largest unit that
    divides the interval exactly, so that the words say exactly what the schedule does."""
    seconds = interval.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count} {unit}s"
    return f"{seconds:g} seconds"
