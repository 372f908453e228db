"""An outage reaches the log as one line, a few summaries with a count, and one line at its end."""

import logging

from django_leasequeue.outage_log import OutageLog

logger = logging.getLogger("tests.outage")


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_two_hours_of_failures_every_two_seconds_make_seven_lines(caplog):
    clock = Clock()
    outage = OutageLog("PostgreSQL", logger, meanwhile="retrying", clock=clock)
    caplog.set_level(logging.INFO, logger.name)
    for _ in range(3601):  # two hours
        outage.failed("cannot connect (connection refused\n\tIs the server running?)")
        clock.now += 2
    assert outage.down_for() == 7202
    outage.succeeded()
    outage.succeeded()  # nothing more to say

    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == (
        "PostgreSQL: cannot connect (connection refused Is the server running?); retrying "
        "(a summary follows at growing intervals while this lasts)."
    )
    # After 1 min, 5 min, 15 min, 1 h, then hourly: each with the count so far.
    assert [line.split(", ")[0] for line in lines[1:-1]] == [
        "PostgreSQL: still failing after 1 min 0 s",
        "PostgreSQL: still failing after 5 min 0 s",
        "PostgreSQL: still failing after 15 min 0 s",
        "PostgreSQL: still failing after 1 h 0 min",
        "PostgreSQL: still failing after 2 h 0 min",
    ]
    assert "31 failed attempt(s)" in lines[1]
    assert lines[-1] == "PostgreSQL answers again, after 2 h 0 min and 3601 failed attempt(s)."
    assert outage.down_for() == 0


def test_a_late_attempt_gets_one_summary_not_one_per_missed_interval(caplog):
    clock = Clock()
    outage = OutageLog("Redis", logger, meanwhile="polling PostgreSQL instead", clock=clock)
    caplog.set_level(logging.INFO, logger.name)
    outage.failed("Error 111")
    clock.now += 1000  # past the 1, 5 and 15 minute marks at once
    outage.failed("Error 111")
    outage.failed("Error 111")
    clock.now += 2700  # past 1 h
    outage.failed("Error 111")
    assert len(caplog.records) == 3


def test_a_new_outage_starts_afresh_with_its_own_first_line(caplog):
    clock = Clock()
    outage = OutageLog("Redis", logger, meanwhile="polling", clock=clock)
    caplog.set_level(logging.INFO, logger.name)
    outage.failed("down")
    outage.succeeded()
    clock.now += 5
    outage.failed("down again")
    assert [record.getMessage().split(";")[0] for record in caplog.records] == [
        "Redis: down",
        "Redis answers again, after 0 s and 1 failed attempt(s).",
        "Redis: down again",
    ]
