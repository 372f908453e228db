"""Schedules without a database: cron and interval ticks, daylight saving, the catch-up plan,
the words the admin shows, and the validation behind the system checks."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from django_leasequeue.schedules.declaration import (
    InvalidScheduledCall,
    declaration_of,
)
from django_leasequeue.schedules.plan import ON_TIME, plan_ticks
from django_leasequeue.schedules.timing import (
    CronTiming,
    IntervalTiming,
    InvalidSchedule,
    timing_of,
)
from django_leasequeue.task import LeaseTask

PARIS = ZoneInfo("Europe/Paris")


def local_day(year: int, month: int, day: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, day, tzinfo=PARIS)
    return start, datetime.combine(start.date() + timedelta(days=1), start.time(), PARIS)


def ticks_within(timing, start: datetime, end: datetime) -> list[datetime]:
    ticks = []
    for tick in timing.ticks_after(start - timedelta(microseconds=1)):
        if tick >= end:
            return ticks
        ticks.append(tick)
    raise AssertionError("unreachable")


# Daylight saving, as cron does it: a 02:30 daily job runs once on both change days.


def test_spring_forward_runs_the_missing_time_once_right_after_the_gap():
    timing = CronTiming("30 2 * * *", PARIS)
    start, end = local_day(2026, 3, 29)  # 02:00 CET jumps to 03:00 CEST
    ticks = ticks_within(timing, start, end)
    assert len(ticks) == 1
    assert ticks[0].astimezone(UTC) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00 CEST


def test_fall_back_runs_the_repeated_time_once_at_its_first_occurrence():
    timing = CronTiming("30 2 * * *", PARIS)
    start, end = local_day(2026, 10, 25)  # 03:00 CEST falls back to 02:00 CET
    ticks = ticks_within(timing, start, end)
    assert [t.astimezone(UTC) for t in ticks] == [datetime(2026, 10, 25, 0, 30, tzinfo=UTC)]
    # From that tick on, the next one is the next day's: the second 02:30 does not run.
    after = next(iter(timing.ticks_after(ticks[0])))
    assert after.astimezone(UTC) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


@pytest.mark.parametrize("day", [(2026, 3, 29), (2026, 10, 25)])
def test_the_plan_fires_a_daily_job_once_across_either_change(day):
    """Workers checking every few seconds all day long fire exactly one 02:30 job."""
    timing = CronTiming("30 2 * * *", PARIS)
    start, end = local_day(*day)
    covered, fired, now = start.astimezone(UTC), [], start.astimezone(UTC)
    while now < end:
        now += timedelta(seconds=7)
        plan = plan_ticks(timing, covered, now, catch_up=1)
        fired += plan.fire
        covered = plan.covered_until
        assert plan.missed == 0
    assert len(fired) == 1


def test_hourly_cron_follows_elapsed_hours_on_change_days():
    hourly = CronTiming("0 * * * *", PARIS)
    assert len(ticks_within(hourly, *local_day(2026, 3, 29))) == 23
    assert len(ticks_within(hourly, *local_day(2026, 10, 25))) == 25


def test_interval_ticks_are_whole_multiples_since_the_epoch():
    timing = IntervalTiming(timedelta(seconds=30))
    moment = datetime(2026, 1, 1, 10, 0, 29, 999999, tzinfo=UTC)
    after = timing.ticks_after(moment)
    assert [next(after) for _ in range(2)] == [
        datetime(2026, 1, 1, 10, 0, 30, tzinfo=UTC),
        datetime(2026, 1, 1, 10, 1, tzinfo=UTC),
    ]
    on_a_tick = datetime(2026, 1, 1, 10, 0, 30, tzinfo=UTC)
    assert next(iter(timing.ticks_after(on_a_tick))) == datetime(2026, 1, 1, 10, 1, tzinfo=UTC)
    assert next(iter(timing.ticks_before(on_a_tick))) == datetime(2026, 1, 1, 10, tzinfo=UTC)


# The plan: on-time ticks all run, missed ones up to catch_up.

HOUR_AGO = datetime(2026, 1, 1, 9, 0, 30, tzinfo=UTC)
NOW = datetime(2026, 1, 1, 10, 0, 30, tzinfo=UTC)  # 30 s after the latest tick: it was missed


@pytest.mark.parametrize("catch_up", [0, 1, 3])
@pytest.mark.parametrize(
    "timing", [IntervalTiming(timedelta(minutes=1)), CronTiming("* * * * *", ZoneInfo("UTC"))]
)
def test_after_an_hour_down_exactly_catch_up_ticks_run(timing, catch_up):
    plan = plan_ticks(timing, HOUR_AGO, NOW, catch_up)
    expected = [
        datetime(2026, 1, 1, 10, tzinfo=UTC) - timedelta(minutes=n) for n in range(catch_up)
    ]
    assert plan.fire == sorted(expected)
    assert plan.missed == 60 - catch_up
    assert plan.covered_until == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert plan.next_run_at == datetime(2026, 1, 1, 10, 1, tzinfo=UTC)


def test_every_on_time_tick_runs_even_several_at_once():
    """A scheduler that was busy for 3 s runs the 3 ticks it finds, whatever catch_up says."""
    timing = IntervalTiming(timedelta(seconds=1))
    covered = datetime(2026, 1, 1, 10, tzinfo=UTC)
    plan = plan_ticks(timing, covered, covered + timedelta(seconds=3.5), catch_up=0)
    assert plan.fire == [covered + timedelta(seconds=n) for n in (1, 2, 3)]
    assert plan.missed == 0


def test_a_tick_older_than_on_time_is_missed():
    timing = IntervalTiming(timedelta(minutes=1))
    tick = datetime(2026, 1, 1, 10, tzinfo=UTC)
    covered = tick - timedelta(seconds=30)
    assert plan_ticks(timing, covered, tick + ON_TIME, catch_up=0).fire == [tick]
    late = plan_ticks(timing, covered, tick + ON_TIME + timedelta(microseconds=1), catch_up=0)
    assert late.fire == [] and late.missed == 1 and late.covered_until == tick


def test_nothing_pending_only_moves_the_next_run():
    timing = IntervalTiming(timedelta(minutes=1))
    plan = plan_ticks(timing, NOW, NOW + timedelta(seconds=5), catch_up=1)
    assert (plan.fire, plan.missed, plan.covered_until) == ([], 0, NOW)


# Words for the admin.


def test_descriptions():
    assert CronTiming("*/5 * * * *", PARIS).describe() == "Every 5 minutes (Europe/Paris)"
    assert IntervalTiming(timedelta(seconds=1)).describe() == "Every second"
    assert IntervalTiming(timedelta(seconds=90)).describe() == "Every 90 seconds"
    assert IntervalTiming(timedelta(hours=2)).describe() == "Every 2 hours"
    assert IntervalTiming(timedelta(milliseconds=1500)).describe() == "Every 1.5 seconds"


# Validation (reported by the system checks, see tests/integration/test_schedules.py).


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cron": "61 * * * *"}, "cron '61 * * * *' is invalid"),
        ({"cron": "* * *"}, "five fields"),
        ({"cron": "* * * * * *"}, "five fields"),
        ({"cron": "@hourly"}, "five fields"),
        ({"cron": "0 3 * * *", "cron_timezone": "Mars/Olympus"}, "not a known time zone"),
        ({"every": timedelta(0)}, "at least 1 second"),
        ({"every": timedelta(seconds=-5)}, "at least 1 second"),
        ({"every": timedelta(milliseconds=999)}, "at least 1 second, not 0:00:00.999000"),
        ({"every": timedelta.max}, "every is too long"),
        ({"every": timedelta(days=365 * 8000)}, "the last day a job row can hold"),
        ({"every": 30}, "must be a timedelta"),
        ({"cron": "* * * * *", "every": timedelta(seconds=1)}, "not both"),
        ({"every": timedelta(seconds=1), "cron_timezone": "UTC"}, "only meaningful with cron"),
    ],
)
def test_invalid_timings_say_why(options, message):
    with pytest.raises(InvalidSchedule, match=message.replace("*", r"\*")):
        timing_of(options.get("cron"), options.get("cron_timezone"), options.get("every"), "UTC")


def _scheduled(func, **options) -> LeaseTask:
    """A scheduled task, not registered (LeaseTask itself, not the decorator)."""
    return LeaseTask(func=func, **options)


def nothing():
    pass


def at(scheduled_at):
    pass


def with_default(scheduled_at, retries=3):
    pass


def needs_more(scheduled_at, user_id):
    pass


def test_an_interval_of_one_second_is_the_shortest():
    assert IntervalTiming(timedelta(seconds=1)).describe() == "Every second"


@pytest.mark.parametrize(
    ("options", "given"),
    [
        ({"cron_timezone": "Europe/Paris"}, "cron_timezone='Europe/Paris'"),
        ({"catch_up": 3}, "catch_up=3"),
        # The default value, given explicitly, is no schedule either.
        ({"overlap": "skip"}, "overlap='skip'"),
        ({"overlap": "allow", "catch_up": 0}, "overlap='allow', catch_up=0"),
    ],
)
def test_schedule_options_without_cron_or_every_are_refused(options, given):
    task = _scheduled(nothing, **options)
    assert not task.is_scheduled
    with pytest.raises(InvalidSchedule, match=f"^{given} without cron or every"):
        declaration_of(task)


def test_the_defaults_apply_when_overlap_and_catch_up_are_not_given():
    declaration = declaration_of(_scheduled(nothing, every=timedelta(minutes=1)))
    assert (declaration.task.overlap, declaration.task.catch_up) == (None, None)
    assert (declaration.overlap, declaration.catch_up) == ("skip", 1)
    given = declaration_of(_scheduled(nothing, every=timedelta(minutes=1), catch_up=0))
    assert (given.overlap, given.catch_up) == ("skip", 0)


def test_scheduled_task_arguments():
    every = {"every": timedelta(seconds=1)}
    assert declaration_of(_scheduled(nothing, **every)).takes_scheduled_at is False
    assert declaration_of(_scheduled(at, **every)).takes_scheduled_at is True
    assert declaration_of(_scheduled(with_default, **every)).takes_scheduled_at is True
    with pytest.raises(InvalidScheduledCall, match="needs user_id"):
        declaration_of(_scheduled(needs_more, **every))


def test_scheduled_options_are_checked():
    every = {"every": timedelta(seconds=1)}
    with pytest.raises(InvalidSchedule, match="overlap must be 'skip' or 'allow'"):
        declaration_of(_scheduled(nothing, overlap="never", **every))
    with pytest.raises(InvalidSchedule, match="catch_up must be a whole number"):
        declaration_of(_scheduled(nothing, catch_up=-1, **every))
    with pytest.raises(InvalidSchedule, match="unique_key must be a string"):
        declaration_of(_scheduled(nothing, unique_key=lambda: "k", **every))


def test_catching_up_several_ticks_that_skip_each_other_is_a_warning(settings):
    from django_leasequeue import task
    from django_leasequeue.checks import check_schedules
    from django_leasequeue.task import declared_schedules

    before = dict(declared_schedules())
    try:
        task(every=timedelta(minutes=1), catch_up=3)(nothing)
        task(every=timedelta(minutes=1), catch_up=3, overlap="allow")(at)
        messages = [m for m in check_schedules("default") if m.obj.startswith(__name__)]
    finally:
        declared_schedules().clear()
        declared_schedules().update(before)
    assert [(m.id, m.obj) for m in messages] == [("leasequeue.W020", f"{__name__}.nothing")]
