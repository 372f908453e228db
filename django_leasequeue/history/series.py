"""The dashboard's series: per queue, one point per interval of the window chosen (an hour of
minutes, a day of 15 minutes, a week of hours), from the history's stored rows and, for what
is not rolled up yet (the newest minutes), from the job table itself.

Every interval has its point: zero jobs, and ``None`` percentiles where nothing ran. An
interval's backlog is the one measured last in it (right after a minute ended, or now for the
newest): a queue without a row then had none due, and an interval in which nothing was measured
(the workers were down) has ``None``.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django_leasequeue.history.buckets import BUCKETS, percentiles
from django_leasequeue.sql import history as history_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.history import HistorySlice

# Above this many due jobs a queue's backlog is estimated (and marked so), as the summary's.
BACKLOG_EXACT_UP_TO = 2_000
# The most the dashboard reads of the job table itself: the minutes a rollup would have
# written by now are the workers' to write (when none runs, nothing finishes either).
LIVE_AT_MOST = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Window:
    """A window of the dashboard: ``points`` intervals of ``seconds``, the newest the one that
    holds now."""

    name: str
    seconds: int
    points: int
    refresh_seconds: int

    def starts(self, now: datetime) -> list[datetime]:
        newest = floor(now, self.seconds)
        return [
            newest - timedelta(seconds=self.seconds * back)
            for back in range(self.points - 1, -1, -1)
        ]


WINDOWS = {
    window.name: window
    for window in (
        Window("1h", seconds=60, points=60, refresh_seconds=10),
        Window("24h", seconds=900, points=96, refresh_seconds=60),
        Window("7d", seconds=3600, points=168, refresh_seconds=60),
    )
}
DEFAULT_WINDOW = "1h"


def floor(moment: datetime, seconds: int) -> datetime:
    """The start of the interval of ``seconds`` (counted from the Unix epoch) that holds it."""
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, UTC)


@dataclass(slots=True)
class _Interval:
    """One queue's interval being summed up."""

    succeeded: int = 0
    failed: int = 0
    pickups: list[dict[int, int]] = field(default_factory=list)
    runs: list[dict[int, int]] = field(default_factory=list)
    # The last backlog measured among the interval's parts: (when, count, estimated).
    backlog: tuple[datetime, int, bool] | None = None

    def add(self, part: HistorySlice) -> None:
        self.succeeded += part.succeeded
        self.failed += part.failed
        if part.pickup_histogram:
            self.pickups.append(part.pickup_histogram)
        if part.run_histogram:
            self.runs.append(part.run_histogram)
        if (
            part.measured_at is not None
            and part.backlog is not None
            and (self.backlog is None or part.measured_at >= self.backlog[0])
        ):
            self.backlog = (part.measured_at, part.backlog, part.backlog_estimated)


@dataclass(frozen=True, slots=True)
class Point:
    t: datetime
    succeeded: int
    failed: int
    backlog: int | None
    backlog_estimated: bool
    pickup_p50: float | None
    pickup_p95: float | None
    run_p50: float | None
    run_p95: float | None


@dataclass(frozen=True, slots=True)
class QueueSeries:
    queue_name: str
    points: list[Point]


@dataclass(frozen=True, slots=True)
class Dashboard:
    window: Window
    now: datetime
    queues: list[QueueSeries]

    def as_json(self) -> dict[str, Any]:
        """The documented JSON (docs/admin.md)."""
        times = [start.isoformat() for start in self.window.starts(self.now)]
        return {
            "window": self.window.name,
            "queues": {series.queue_name: _queue_json(series, times) for series in self.queues},
        }


def _queue_json(series: QueueSeries, times: list[str]) -> dict[str, list[dict[str, Any]]]:
    points = list(zip(times, series.points, strict=True))
    return {
        "finished": [{"t": t, "succeeded": p.succeeded, "failed": p.failed} for t, p in points],
        "backlog": [
            {"t": t, "count": p.backlog, "estimated": p.backlog_estimated} for t, p in points
        ],
        "pickup_ms": [{"t": t, "p50": p.pickup_p50, "p95": p.pickup_p95} for t, p in points],
        "run_ms": [{"t": t, "p50": p.run_p50, "p95": p.run_p95} for t, p in points],
    }


def dashboard(window: Window, database: str, declared: Iterable[str]) -> Dashboard:
    """The window's series for the declared queues and every queue with data in it."""
    mark = execute(history_sql.history_mark(), database)
    now: datetime = mark["now"]
    rolled_up_to: datetime | None = mark["rolled_up_to"]
    starts = window.starts(now)
    since = starts[0]
    live_since = max(since, floor(now, 60) - LIVE_AT_MOST)
    parts: list[HistorySlice] = []
    if rolled_up_to is not None and rolled_up_to > since:
        split = floor(rolled_up_to, window.seconds)
        parts += execute(
            history_sql.history_rows(
                seconds=window.seconds, since=since, split=split, until=rolled_up_to
            ),
            database,
        )
        live_since = max(live_since, rolled_up_to)
    parts += execute(
        history_sql.history_minutes(
            since=live_since, until=floor(now, 60) + timedelta(minutes=1), buckets=BUCKETS
        ),
        database,
    )
    backlog = execute(history_sql.due_backlog(exact_up_to=BACKLOG_EXACT_UP_TO), database)
    queues = sorted({*declared, *(part.queue_name for part in parts), *backlog})
    # The backlog measured now is the newest interval's, and the last minute's while it is
    # not rolled up yet (what the rollup will record for it, measured as late).
    last_minute = floor(now, 60) - timedelta(minutes=1)
    measured = [now]
    if rolled_up_to is None or rolled_up_to <= last_minute:
        measured.append(last_minute)
    parts += [
        HistorySlice(
            queue_name=name,
            start=start,
            succeeded=0,
            failed=0,
            pickup_histogram={},
            run_histogram={},
            backlog=backlog[name].backlog if name in backlog else 0,
            backlog_estimated=name in backlog and backlog[name].estimated,
            measured_at=now,
        )
        for name in queues
        for start in measured
    ]
    return Dashboard(window, now, _series(window, starts, queues, parts))


def _series(
    window: Window, starts: list[datetime], queues: list[str], parts: list[HistorySlice]
) -> list[QueueSeries]:
    first = starts[0]
    intervals = {name: [_Interval() for _ in starts] for name in queues}
    # When each interval's backlog was measured last, whatever the queue (a queue without a
    # row then had no due job).
    measured: list[datetime | None] = [None] * len(starts)
    for part in parts:
        index = int((part.start - first).total_seconds()) // window.seconds
        if not 0 <= index < len(starts):
            continue
        if part.measured_at is not None and part.backlog is not None:
            latest = measured[index]
            if latest is None or part.measured_at > latest:
                measured[index] = part.measured_at
        intervals[part.queue_name][index].add(part)
    return [
        QueueSeries(
            name,
            [
                _point(start, interval, measured_at)
                for start, interval, measured_at in zip(
                    starts, intervals[name], measured, strict=True
                )
            ],
        )
        for name in queues
    ]


def _point(start: datetime, interval: _Interval, measured_at: datetime | None) -> Point:
    backlog: int | None = None
    estimated = False
    if measured_at is not None:
        backlog = 0
        if interval.backlog is not None and interval.backlog[0] == measured_at:
            _, backlog, estimated = interval.backlog
    pickup_p50, pickup_p95 = percentiles(_merged(interval.pickups), (0.5, 0.95))
    run_p50, run_p95 = percentiles(_merged(interval.runs), (0.5, 0.95))
    return Point(
        t=start,
        succeeded=interval.succeeded,
        failed=interval.failed,
        backlog=backlog,
        backlog_estimated=estimated,
        pickup_p50=pickup_p50,
        pickup_p95=pickup_p95,
        run_p50=run_p50,
        run_p95=run_p95,
    )


def _merged(histograms: list[dict[int, int]]) -> dict[int, int]:
    """One histogram of several (most intervals of a day or a week are one stored row)."""
    if len(histograms) == 1:
        return histograms[0]
    merged: Counter[int] = Counter()
    for histogram in histograms:
        merged.update(histogram)
    return merged
