"""The queues' history: the rollup a worker's sweep writes (runtime/history_rollup.py) on the
real PostgreSQL, and the dashboard's series read from it and from the job table
(history/series.py). Jobs are written with the times of a past they stand for."""

import asyncio
import contextlib
import time
from datetime import datetime, timedelta

import pytest
from django.db import connection

from django_leasequeue.history.buckets import BUCKETS, bucket_ms, percentile
from django_leasequeue.history.series import WINDOWS, dashboard, floor
from django_leasequeue.models import Job, QueueHistory, QueueHistoryMark
from django_leasequeue.runtime import history_rollup
from django_leasequeue.runtime.database import Database
from django_leasequeue.runtime.history_rollup import HistoryRollup
from tests.support.helpers import recover_sweep
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)


def _now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def _finished(
    queue: str,
    finished_at: datetime,
    *,
    status: str = "succeeded",
    pickup_ms: float = 5,
    run_ms: float = 100,
    attempt: int = 1,
) -> Job:
    claimed = finished_at - timedelta(milliseconds=run_ms)
    return Job.objects.create(
        task_path="tests.support.tasks.basic.add",
        queue_name=queue,
        status=status,
        run_after=claimed - timedelta(milliseconds=pickup_ms),
        started_at=claimed,
        last_attempted_at=claimed,
        finished_at=finished_at,
        attempt=attempt,
    )


def _due(queue: str, count: int, *, since: datetime) -> None:
    Job.objects.bulk_create(
        Job(
            task_path="tests.support.tasks.basic.add",
            queue_name=queue,
            status="queued",
            run_after=since + timedelta(milliseconds=index),
        )
        for index in range(count)
    )


def _roll_up(*, rollups: int = 1, sweeps: int = 1, declared: tuple[str, ...] = ()) -> None:
    """``sweeps`` sweeps, each of ``rollups`` workers at once, each on a connection of its own."""

    async def run() -> None:
        databases = [
            Database("default", prepared_statements=False, name=f"history-{n}", lease_seconds=30)
            for n in range(rollups)
        ]
        try:
            for _ in range(sweeps):
                await asyncio.gather(*(HistoryRollup(db, declared).roll_up() for db in databases))
        finally:
            for db in databases:
                await db.close()

    asyncio.run(run())


def _minutes(queue: str) -> dict[datetime, QueueHistory]:
    return {row.start: row for row in QueueHistory.objects.filter(seconds=60, queue_name=queue)}


def test_the_rollup_counts_each_job_once_by_its_final_status_with_its_latencies():
    now = _now()
    minute = floor(now, 60) - timedelta(minutes=3)
    _finished("emails", minute + timedelta(seconds=10), pickup_ms=3, run_ms=40)
    # Failed once, then succeeded: one job, counted once, as succeeded.
    _finished("emails", minute + timedelta(seconds=20), pickup_ms=3, run_ms=40, attempt=2)
    _finished("emails", minute + timedelta(seconds=30), status="failed", pickup_ms=3000)
    _finished("emails", minute + timedelta(seconds=40), status="cancelled")
    _finished("other", minute + timedelta(seconds=50))

    _roll_up()

    row = _minutes("emails")[minute]
    assert (row.succeeded, row.failed) == (2, 1)
    pickups = dict(zip(row.pickup_buckets, row.pickup_counts, strict=True))
    # The cancelled job's claim is a claim; its end is no finish.
    assert sum(pickups.values()) == 4
    assert percentile(pickups, 0.5) == pytest.approx(3, rel=0.1)
    assert percentile(pickups, 1.0) == pytest.approx(3000, rel=0.1)
    runs = dict(zip(row.run_buckets, row.run_counts, strict=True))
    assert sum(runs.values()) == 3
    assert percentile(runs, 0.5) == pytest.approx(40, rel=0.1)
    assert _minutes("other")[minute].succeeded == 1
    mark = QueueHistoryMark.objects.get()
    assert mark.rolled_up_to > minute and mark.rolled_up_to <= floor(now, 60)


def test_concurrent_rollups_and_a_stale_mark_write_each_minute_once():
    now = _now()
    first = floor(now, 60) - timedelta(minutes=22)
    for minute in range(20):
        for n in range(3):
            _finished("default", first + timedelta(minutes=minute, seconds=n))
    _roll_up(rollups=4, sweeps=2)
    # A worker whose mark is behind (a sweep that read it before another moved it) writes the
    # same minutes again: they stay as they were.
    QueueHistoryMark.objects.update(rolled_up_to=first)
    _roll_up(rollups=2)

    minutes = _minutes("default")
    assert [minutes[first + timedelta(minutes=m)].succeeded for m in range(20)] == [3] * 20
    assert QueueHistory.objects.filter(seconds=60, start__gte=first).count() == len(minutes)


def test_after_an_outage_the_rollup_catches_up_and_merges_the_hours_and_quarters(monkeypatch):
    now = _now()
    hour = floor(now, 3600) - timedelta(hours=3)
    for minute in range(60):
        _finished("default", hour + timedelta(minutes=minute, seconds=30), run_ms=10 + minute)
    QueueHistoryMark.objects.create(id=1, rolled_up_to=hour - timedelta(hours=2))
    # A sweep does few batches: catching up five hours takes sweeps one after another.
    monkeypatch.setattr(history_rollup, "BATCHES_PER_SWEEP", 4)
    monkeypatch.setattr(history_rollup, "BUSY_SECONDS", 60)  # however loaded the machine

    _roll_up(sweeps=1)
    assert QueueHistoryMark.objects.get().rolled_up_to == hour - timedelta(hours=1)
    _roll_up(sweeps=5)

    assert QueueHistoryMark.objects.get().rolled_up_to >= floor(now, 60) - timedelta(minutes=1)
    [hourly] = QueueHistory.objects.filter(seconds=3600, start=hour, queue_name="default")
    assert hourly.succeeded == 60
    runs = dict(zip(hourly.run_buckets, hourly.run_counts, strict=True))
    assert sum(runs.values()) == 60
    assert percentile(runs, 0.5) == pytest.approx(10 + 29.5, rel=0.1)
    quarters = QueueHistory.objects.filter(
        seconds=900, start__gte=hour, start__lt=hour + timedelta(hours=1)
    )
    assert sorted(q.succeeded for q in quarters) == [15, 15, 15, 15]
    # Minutes rolled up late have no backlog: it cannot be measured in the past.
    assert hourly.backlog is None


def test_the_backlog_is_measured_for_the_last_minute_and_estimated_above_the_cap(backend):
    now = _now()
    _due("low", 5, since=now - timedelta(minutes=5))
    high = add.using(queue_name="high")
    # One batch (bursty backlogs are test_backlog_estimates.py's): over the cap, estimated.
    backend.enqueue_many([(high, (n, n), {}) for n in range(2_600)])
    # Not due yet: not backlog.
    _due("other", 7, since=now + timedelta(hours=1))

    _roll_up(declared=("default",))

    last = QueueHistory.objects.filter(seconds=60).order_by("-start").first().start
    rows = {row.queue_name: row for row in QueueHistory.objects.filter(seconds=60, start=last)}
    assert (rows["low"].backlog, rows["low"].backlog_estimated) == (5, False)
    assert rows["high"].backlog_estimated
    assert rows["high"].backlog == pytest.approx(2_600, rel=0.25)
    assert (rows["default"].backlog, rows["default"].backlog_estimated) == (0, False)
    assert "other" not in rows


def test_history_outlives_the_jobs_and_is_pruned_after_its_keep():
    now = _now()
    minute = floor(now, 60) - timedelta(minutes=2)
    job = _finished("emails", minute + timedelta(seconds=1))
    _roll_up()
    QueueHistory.objects.create(
        seconds=60, start=minute - history_rollup.KEEP - timedelta(hours=1), queue_name="emails"
    )
    job.delete()  # prunejobs took it

    # The next sweep prunes the row older than the history's keep (after a minute's rollup).
    QueueHistoryMark.objects.update(rolled_up_to=minute - timedelta(minutes=2))
    _roll_up()

    assert QueueHistory.objects.filter(start__lt=minute - history_rollup.KEEP).count() == 0
    series = dashboard(WINDOWS["1h"], "default", ()).as_json()["queues"]["emails"]
    assert sum(point["succeeded"] for point in series["finished"]) == 1


def test_the_series_has_every_interval_and_the_newest_is_live():
    now = _now()
    _finished("emails", floor(now, 60) - timedelta(minutes=30), pickup_ms=20, run_ms=200)
    _roll_up(declared=("emails",))
    # Finished a moment ago: not rolled up, counted all the same.
    _finished("emails", _now() - timedelta(milliseconds=5), status="failed", run_ms=200)

    for name, window in WINDOWS.items():
        answer = dashboard(window, "default", ("default",)).as_json()
        assert answer["window"] == name
        assert set(answer["queues"]) == {"default", "emails"}
        series = answer["queues"]["emails"]
        assert set(series) == {"finished", "backlog", "pickup_ms", "run_ms"}
        for points in series.values():
            assert len(points) == window.points
            starts = [datetime.fromisoformat(point["t"]) for point in points]
            assert starts == [
                starts[0] + timedelta(seconds=window.seconds * n) for n in range(window.points)
            ]
        assert series["finished"][-1]["failed"] == 1
        assert sum(point["succeeded"] for point in series["finished"]) == 1
        ran = [point for point in series["run_ms"] if point["p50"] is not None]
        assert ran and all(point["p50"] == pytest.approx(200, rel=0.1) for point in ran)
        assert series["pickup_ms"][0] == {
            "t": series["pickup_ms"][0]["t"],
            "p50": None,
            "p95": None,
        }
        assert series["backlog"][-1] == {
            "t": series["backlog"][-1]["t"],
            "count": 0,
            "estimated": False,
        }
        assert answer["queues"]["default"]["finished"][-1] == {
            "t": series["finished"][-1]["t"],
            "succeeded": 0,
            "failed": 0,
        }


def test_intervals_without_any_worker_have_no_backlog_measured():
    now = _now()
    QueueHistoryMark.objects.create(id=1, rolled_up_to=floor(now, 60) - timedelta(minutes=1))
    backlog = dashboard(WINDOWS["1h"], "default", ("default",)).as_json()["queues"]["default"][
        "backlog"
    ]
    assert [point["count"] for point in backlog[:-2]] == [None] * 58
    assert [point["count"] for point in backlog[-2:]] == [0, 0]


def test_a_percentile_read_back_is_within_a_bucket_of_the_latency():
    now = _now()
    first = floor(now, 60) - timedelta(minutes=10)
    latencies = (0.3, 1, 3.7, 250, 12_000, 3_600_000)
    for minute, run_ms in enumerate(latencies):
        _finished("default", first + timedelta(minutes=minute, seconds=1), run_ms=run_ms)
    _roll_up()
    minutes = _minutes("default")
    for minute, run_ms in enumerate(latencies):
        row = minutes[first + timedelta(minutes=minute)]
        runs = dict(zip(row.run_buckets, row.run_counts, strict=True))
        assert percentile(runs, 0.5) == pytest.approx(run_ms, rel=0.1)
    assert percentile({}, 0.5) is None
    assert bucket_ms(0) == BUCKETS.base_ms / 2


def test_the_recover_sweep_rolls_the_history_up_on_its_connection(backend):
    now = _now()
    _finished("emails", floor(now, 60) - timedelta(minutes=2))
    rolled_up = QueueHistory.objects.filter(seconds=60, queue_name="emails", succeeded=1)

    async def sweep_for_a_moment() -> bool:
        async with recover_sweep(backend) as sweep:
            running = asyncio.create_task(sweep.run())
            try:
                # Until the rollup is there: 100 looks of 0.05 s were not always enough for a
                # sweep a loaded machine paused for seconds.
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if await asyncio.to_thread(_exists_and_close, rolled_up):
                        break
                    await asyncio.sleep(0.05)
            finally:
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
            return sweep.history.db is sweep.db

    assert asyncio.run(sweep_for_a_moment())
    assert rolled_up.count() == 1


def _exists_and_close(rows) -> bool:
    try:
        return rows.exists()
    finally:
        connection.close()
