"""Periodic jobs with real ``runworkers`` processes, PostgreSQL and Redis: exactly one job per
tick with several supervisors and no leader, no overlap, kill -9 of schedulers, pause and
resume from the admin, and catch-up after downtime.

Ticks are counted from the job table (each job carries its tick, ``scheduled_at``); the test
tasks also record each run with its own start and end times (``TickRun``). The schedules live
in apps installed only in these tests' workers (``LEASEQUEUE_TEST_APPS``, tests/periodic).
"""

import itertools
import os
import random
import signal
import time
from collections import Counter
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.urls import reverse

from django_leasequeue.models import Job, Schedule
from django_leasequeue.schedules.plan import ON_TIME
from tests.acceptance.harness import wait_until
from tests.periodic.catching_up.tasks import (
    FIVE_MINUTES,
    default_catch_up,
    no_catch_up,
    three_catch_up,
)
from tests.periodic.every_second.tasks import tick
from tests.periodic.overlapping.tasks import slow_tick
from tests.support.models import TickRun
from tests.support.servers import RedisServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SECOND = timedelta(seconds=1)


def installing(app: str) -> dict[str, str]:
    return {"LEASEQUEUE_TEST_APPS": f"tests.periodic.{app}"}


def db_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def ticks_of(task) -> list[datetime]:
    """The tick of every job of ``task``, in order (duplicates kept)."""
    values = Job.objects.filter(task_path=task.module_path).values_list(
        "kwargs__scheduled_at", flat=True
    )
    return sorted(datetime.fromisoformat(value) for value in values)


def assert_one_job_per_tick_without_gaps(ticks: list[datetime]) -> None:
    doubled = [at for at, count in Counter(ticks).items() if count > 1]
    assert not doubled, f"ticks with more than one job: {doubled}"
    gaps = [(a, b) for a, b in itertools.pairwise(ticks) if b - a != SECOND]
    assert not gaps, f"ticks missed between: {gaps}"


@pytest.mark.django_independent
def test_three_supervisors_of_two_processes_run_exactly_one_job_per_tick(start_workers):
    groups = [
        start_workers("--processes", "2", "--concurrency", "4", env=installing("every_second"))
        for _ in range(3)
    ]
    for group in groups:
        group.wait_for_children(2, timeout=60)
    wait_until(lambda: len(ticks_of(tick)) >= 2, 60, "the first ticks")
    started = db_now()
    time.sleep(15)
    ended = db_now()
    # The schedulers and the jobs may lag the clock on a loaded machine: the window's last tick
    # and the run of each tick in it are waited for, so that what is counted is what ran.
    wait_until(lambda: ticks_of(tick)[-1] >= ended, 60, "the ticks up to the window's end")
    wait_until(
        lambda: (
            TickRun.objects.filter(task_name="tick", scheduled_at__lte=ended).count()
            >= sum(1 for at in ticks_of(tick) if at <= ended)
        ),
        60,
        "the runs of the window's ticks",
    )
    for group in groups:
        group.stop()
    ticks = ticks_of(tick)
    assert_one_job_per_tick_without_gaps(ticks)
    within = [at for at in ticks if started <= at <= ended]
    assert len(within) >= 14, f"{len(within)} ticks in {ended - started}"
    # Every process started a scheduler; the jobs ran and saw their tick as a datetime.
    logs = "".join(group.log() for group in groups)
    assert logs.count("Scheduling 1 schedule(s).") >= 6
    runs = TickRun.objects.filter(task_name="tick")
    assert runs.count() >= len(within)
    assert {run.scheduled_at for run in runs} <= set(ticks)
    print(f"{len(ticks)} ticks, {len(within)} in the 15 s window, 0 doubled, 0 missed")


@pytest.mark.django_independent
def test_a_3_second_job_on_a_1_second_schedule_never_overlaps(start_workers):
    workers = start_workers("--processes", "2", "--concurrency", "4", env=installing("overlapping"))
    wait_until(lambda: TickRun.objects.filter(task_name="slow_tick").count() >= 4, 90, "4 runs")
    workers.stop()
    runs = list(TickRun.objects.filter(task_name="slow_tick").order_by("started_at"))
    for before, after in itertools.pairwise(runs):
        assert after.started_at >= before.finished_at, (
            f"run of {after.scheduled_at} started before the run of {before.scheduled_at} ended"
        )
    schedule = Schedule.objects.get(task_path=slow_tick.module_path)
    # Each run takes 3 s: at least the two ticks after each fired one are skipped.
    assert schedule.skipped_count >= 2 * (len(runs) - 1)
    print(f"{len(runs)} runs, none overlapping, {schedule.skipped_count} ticks skipped")


def schedulers(workers) -> list[int]:
    """The worker processes that run now and have started their scheduler."""
    log = workers.log()
    return [
        pid
        for pid in workers.children()
        if f"[worker {pid}] django_leasequeue.runtime.scheduler: Scheduling" in log
    ]


@pytest.mark.django_independent
def test_kill_9_of_the_scheduling_process_misses_and_doubles_no_tick(start_workers):
    """Six times, SIGKILL one of the two processes that are scheduling, at a random moment of
    their one-second cycle (between checks, or in the middle of firing a tick); the other one
    goes on, the supervisor restarts the killed one."""
    workers = start_workers(
        "--processes", "2", "--concurrency", "4", env=installing("every_second")
    )
    wait_until(lambda: len(ticks_of(tick)) >= 2, 90, "the first ticks")
    kills = 0
    for _ in range(6):
        wait_until(lambda: len(schedulers(workers)) == 2, 90, "two scheduling processes")
        time.sleep(random.uniform(0.3, 2.0))
        victim = random.choice(schedulers(workers))
        os.kill(victim, signal.SIGKILL)
        kills += 1
    wait_until(lambda: len(schedulers(workers)) == 2, 90, "two scheduling processes")
    last_kill = db_now()
    wait_until(lambda: ticks_of(tick)[-1] >= last_kill + 3 * SECOND, 60, "ticks after the kills")
    workers.stop()
    assert workers.log().count("killed by SIGKILL") == kills
    ticks = ticks_of(tick)
    assert_one_job_per_tick_without_gaps(ticks)
    print(f"kill -9 x{kills}: {len(ticks)} ticks, none missed or doubled")


@pytest.mark.django_independent
def test_a_redis_outage_is_one_line_however_many_ticks_it_lasts(start_workers):
    """The workers' Redis stops for several ticks: the schedule goes on (its jobs are found by
    polling), and the log says so once, then once more when Redis answers again."""
    own_redis = RedisServer().start()
    try:
        workers = start_workers(
            "--concurrency", "4", env={**installing("every_second"), "REDIS_URL": own_redis.url}
        )
        wait_until(lambda: len(ticks_of(tick)) >= 2, 90, "the first ticks")
        own_redis.stop()
        stopped_at = db_now()

        def run_since(moment: datetime) -> int:
            return Job.objects.filter(
                task_path=tick.module_path, enqueued_at__gt=moment, status="succeeded"
            ).count()

        wait_until(lambda: run_since(stopped_at) >= 8, 60, "ticks run during the outage")
        redis_lines = [line for line in workers.log().splitlines() if " Redis: " in line]
        assert len(redis_lines) == 1, redis_lines  # not one per tick, nor per poll
        assert "WARNING" in redis_lines[0]

        own_redis.start()
        wait_until(lambda: "Redis answers again" in workers.log(), 30, "the end of the outage")
        back_at = db_now()
        wait_until(lambda: run_since(back_at) >= 2, 30, "ticks after the outage")
        log = workers.log()
        assert log.count("Redis answers again, after ") == 1
        assert len([line for line in log.splitlines() if " Redis: " in line]) == 1
        assert "Traceback" not in log
    finally:
        own_redis.stop()


def test_pause_and_resume_from_the_admin(start_workers, admin_client):
    workers = start_workers(
        "--processes", "2", "--concurrency", "4", env=installing("every_second")
    )
    wait_until(lambda: len(ticks_of(tick)) >= 3, 90, "the first ticks")
    schedule = Schedule.objects.get(task_path=tick.module_path)
    changelist = reverse("admin:leasequeue_schedule_changelist")

    response = admin_client.post(
        changelist, {"action": "pause_schedules", "_selected_action": [schedule.pk]}, follow=True
    )
    assert f"1 schedule paused ({tick.module_path})" in response.content.decode()
    paused_at = db_now()
    time.sleep(2.5)  # two ticks, and a margin for a loaded machine
    assert not Job.objects.filter(task_path=tick.module_path, enqueued_at__gt=paused_at).exists()
    page = admin_client.get(changelist).content.decode()
    assert "paused" in page

    before_resume = db_now()
    response = admin_client.post(
        changelist, {"action": "resume_schedules", "_selected_action": [schedule.pk]}, follow=True
    )
    assert f"1 schedule resumed ({tick.module_path})" in response.content.decode()
    wait_until(
        lambda: (
            Job.objects.filter(task_path=tick.module_path, enqueued_at__gt=before_resume).count()
            >= 2
        ),
        10,
        "jobs again after resume",
    )
    workers.stop()
    # Paused ticks are not caught up after the resume: none between the pause and the resume.
    assert not [at for at in ticks_of(tick) if paused_at < at <= before_resume]


def latest_tick(moment: datetime) -> datetime:
    """The latest five-minute tick of the wall clock at or before ``moment``."""
    period = FIVE_MINUTES.total_seconds()
    return datetime.fromtimestamp(moment.timestamp() // period * period, tz=moment.tzinfo)


def a_tick_was_on_time(rewound_at: datetime, caught_up_at: datetime) -> bool:
    """Whether a real tick counted as on time during the catch-up (ON_TIME old or less at the
    rewind, or falling due after it): it would run beside the caught-up ones."""
    return latest_tick(caught_up_at) > rewound_at - ON_TIME


def catch_up_after_an_hour_down(start_workers, env, paths) -> tuple[datetime, datetime]:
    """Rewinds the schedules by an hour, lets two processes catch up, stops them; returns the
    database clock before the rewind and after the catch-up."""
    Job.objects.filter(task_path__in=paths).delete()
    rewound_at = db_now()
    stopped_at = rewound_at - timedelta(hours=1)  # the simulated downtime
    Schedule.objects.filter(task_path__in=paths).update(
        covered_until=stopped_at, next_run_at=stopped_at, missed_count=0
    )
    workers = start_workers("--processes", "2", env=env)
    wait_until(
        lambda: not Schedule.objects.filter(task_path__in=paths, next_run_at__lt=db_now()).exists(),
        60,
        "the schedules to catch up",
    )
    workers.stop()
    return rewound_at, db_now()


@pytest.mark.django_independent
def test_catch_up_after_an_hour_down_runs_exactly_catch_up_jobs(start_workers):
    env = installing("catching_up")
    paths = [task.module_path for task in (no_catch_up, default_catch_up, three_catch_up)]
    first = start_workers("--processes", "1", env=env)
    wait_until(lambda: Schedule.objects.filter(task_path__in=paths).count() == 3, 60, "sync")
    first.stop()
    # The expectations count the missed ticks of an hour; a real tick on time during the
    # catch-up would run too. It takes seconds: a second try, once the tick that spoiled the
    # first is no longer on time, has minutes before the next one.
    rewound_at, caught_up_at = catch_up_after_an_hour_down(start_workers, env, paths)
    if a_tick_was_on_time(rewound_at, caught_up_at):
        wait_until(
            lambda: db_now() - latest_tick(db_now()) > ON_TIME + SECOND, 30, "a quiet minute"
        )
        rewound_at, caught_up_at = catch_up_after_an_hour_down(start_workers, env, paths)
    assert not a_tick_was_on_time(rewound_at, caught_up_at)
    for task, catch_up in ((no_catch_up, 0), (default_catch_up, 1), (three_catch_up, 3)):
        ticks = ticks_of(task)
        assert len(ticks) == catch_up, (task.name, ticks)
        schedule = Schedule.objects.get(task_path=task.module_path)
        assert schedule.missed_count == 12 - catch_up  # an hour of five-minute ticks
        if ticks:
            # The latest missed ticks, the last one the latest tick before now.
            latest = schedule.covered_until
            assert ticks == [latest - FIVE_MINUTES * n for n in reversed(range(catch_up))]
