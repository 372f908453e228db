"""The schedule table's statements on real PostgreSQL: sync and retirement, one job per tick when
processes race, the overlap policy, pause; and the system checks that refuse bad schedules."""

import html
import os
import re
import subprocess
import sys
from datetime import timedelta

import pytest
from django.db.models import F

from django_leasequeue.ids import uuid7_strs
from django_leasequeue.models import Job, Schedule
from django_leasequeue.schedules.declaration import declaration_of
from django_leasequeue.schedules.firing import job_fields, run_now
from django_leasequeue.sql.executor import execute
from django_leasequeue.sql.jobs import database_now
from django_leasequeue.sql.schedules import (
    due_schedules,
    fire_schedule,
    sync_schedules,
)
from django_leasequeue.task import LeaseTask
from tests.acceptance.harness import ROOT
from tests.periodic.every_second.tasks import tick
from tests.periodic.overlapping.tasks import slow_tick
from tests.support.helpers import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def allowed_tick(scheduled_at):
    """A schedule that always enqueues (declared without the decorator: not registered)."""


allowed_tick = LeaseTask(func=allowed_tick, every=timedelta(seconds=1), overlap="allow")


def sync(*tasks) -> list[str]:
    declarations = [declaration_of(task) for task in tasks]
    now = execute(database_now())
    next_run_ats = [next(iter(d.timing.ticks_after(now))) for d in declarations]
    return execute(sync_schedules("default", declarations, next_run_ats, now))


def fire(backend, task, at, *, version=None):
    """Fire the tick ``at`` as a scheduler does; None when the compare-and-swap lost."""
    declaration = declaration_of(task)
    if version is None:
        version = Schedule.objects.get(task_path=task.module_path).version
    [job_id] = uuid7_strs(1)
    return execute(
        fire_schedule(
            declaration,
            job_fields(backend.enqueuer, declaration),
            job_id=job_id,
            version=version,
            tick=at,
            covered_until=at,
            next_run_at=at + timedelta(seconds=1),
        )
    )


def next_tick(task):
    row = Schedule.objects.get(task_path=task.module_path)
    return row.covered_until.replace(microsecond=0) + timedelta(seconds=1)


def test_sync_writes_declared_schedules_and_retires_the_others():
    assert sync(tick, slow_tick) == []
    rows = {row.task_path: row for row in Schedule.objects.all()}
    assert set(rows) == {tick.module_path, slow_tick.module_path}
    assert rows[tick.module_path].every == timedelta(seconds=1)
    assert rows[tick.module_path].next_run_at > rows[tick.module_path].covered_until
    version = rows[tick.module_path].version

    assert sync(tick, slow_tick) == []  # nothing changed: nothing written
    assert Schedule.objects.get(task_path=tick.module_path).version == version

    assert sync(tick) == [slow_tick.module_path]  # removed from the code
    retired = Schedule.objects.get(task_path=slow_tick.module_path)
    assert retired.retired
    # A retired schedule is not due for anyone, and cannot fire.
    assert execute(due_schedules([slow_tick.module_path])).due == []

    Schedule.objects.filter(pk=retired.pk).update(
        covered_until=F("covered_until") - timedelta(hours=1)
    )
    assert sync(tick, slow_tick) == []  # back in the code: starts afresh, no catch-up
    back = Schedule.objects.get(task_path=slow_tick.module_path)
    assert not back.retired and back.covered_until > retired.covered_until


def test_many_processes_racing_for_a_tick_insert_one_job(backend):
    sync(tick)
    at = next_tick(tick)
    row = Schedule.objects.get(task_path=tick.module_path)

    def race(_: int):
        return fire(backend, tick, at, version=row.version)

    results = run_in_threads(8, race)
    winners = [fired for fired in results if fired is not None]
    assert len(winners) == 1 and winners[0].job_id is not None
    jobs = list(Job.objects.filter(task_path=tick.module_path))
    assert [job.id for job in jobs] == [winners[0].job_id]
    assert jobs[0].kwargs == {"scheduled_at": at.isoformat()}


def test_processes_that_read_the_schedule_at_different_times_still_fire_once(backend):
    """Each racer reads the schedule, then fires the tick unless someone covered it already
    (overlap "allow", so that every tick's job is inserted while none runs)."""
    sync(allowed_tick)
    ticks = [next_tick(allowed_tick) + timedelta(seconds=n) for n in range(5)]

    def scheduler(_: int) -> int:
        fired = 0
        for at in ticks:
            for _attempt in range(20):
                row = Schedule.objects.get(task_path=allowed_tick.module_path)
                if row.covered_until >= at:
                    break
                outcome = fire(backend, allowed_tick, at, version=row.version)
                if outcome is not None:
                    fired += 1
                    break
        return fired

    assert sum(run_in_threads(6, scheduler)) == len(ticks)
    scheduled = sorted(
        Job.objects.filter(task_path=allowed_tick.module_path).values_list(
            "kwargs__scheduled_at", flat=True
        )
    )
    assert scheduled == [at.isoformat() for at in ticks]


def test_overlap_skip_enqueues_nothing_while_the_previous_run_is_unfinished(backend):
    sync(slow_tick)
    first = next_tick(slow_tick)
    job_id = fire(backend, slow_tick, first).job_id
    assert job_id is not None
    for n in (1, 2):
        skipped = fire(backend, slow_tick, first + timedelta(seconds=n))
        assert skipped is not None and skipped.job_id is None
    row = Schedule.objects.get(task_path=slow_tick.module_path)
    assert (row.skipped_count, row.last_job_id) == (2, job_id)
    assert row.covered_until == first + timedelta(seconds=2)

    Job.objects.filter(pk=job_id).update(status="running")  # still unfinished
    assert fire(backend, slow_tick, first + timedelta(seconds=3)).job_id is None
    Job.objects.filter(pk=job_id).update(status="succeeded")
    assert fire(backend, slow_tick, first + timedelta(seconds=4)).job_id is not None
    assert Job.objects.filter(task_path=slow_tick.module_path).count() == 2


def test_overlap_allow_always_enqueues(backend):
    sync(allowed_tick)
    first = next_tick(allowed_tick)
    fired = [fire(backend, allowed_tick, first + timedelta(seconds=n)).job_id for n in range(3)]
    assert None not in fired
    assert Job.objects.filter(task_path=allowed_tick.module_path, status="queued").count() == 3
    assert Schedule.objects.get(task_path=allowed_tick.module_path).skipped_count == 0


def pending_capped_tick(scheduled_at):
    """A schedule whose task is capped at one unfinished job (not registered)."""


pending_capped_tick = LeaseTask(
    func=pending_capped_tick, every=timedelta(seconds=1), overlap="allow", max_pending=1
)


def test_ticks_and_run_now_are_not_held_to_max_pending(backend):
    """As docs/flow-control.md says: a full cap never makes a tick disappear; ``overlap``
    bounds a schedule."""
    sync(pending_capped_tick)
    first = next_tick(pending_capped_tick)
    fired = [
        fire(backend, pending_capped_tick, first + timedelta(seconds=n)).job_id for n in range(2)
    ]
    assert None not in fired
    assert run_now(backend.enqueuer, declaration_of(pending_capped_tick)) is not None
    unfinished = Job.objects.filter(task_path=pending_capped_tick.module_path, status="queued")
    assert unfinished.count() == 3  # past the cap of 1
    assert not unfinished.filter(pending_key=None).exists()  # each counts against the cap


def test_a_paused_schedule_does_not_fire_its_ticks_but_runs_now(backend):
    sync(slow_tick)
    Schedule.objects.filter(task_path=slow_tick.module_path).update(paused=True)
    assert fire(backend, slow_tick, next_tick(slow_tick)) is None
    assert execute(due_schedules([slow_tick.module_path])).due == []

    job_id = run_now(backend.enqueuer, declaration_of(slow_tick))
    job = Job.objects.get(pk=job_id)
    assert job.task_path == slow_tick.module_path and "scheduled_at" in job.kwargs
    # Run now obeys the overlap policy: the job above is unfinished.
    assert run_now(backend.enqueuer, declaration_of(slow_tick)) is None
    row = Schedule.objects.get(task_path=slow_tick.module_path)
    assert (row.last_job_id, row.skipped_count) == (job_id, 1)


def test_the_due_check_says_when_the_next_schedule_is_due():
    sync(tick, slow_tick)
    paths = [tick.module_path, slow_tick.module_path]
    # Ticks a minute ahead: an every-second tick synced now is due by the next second, which a
    # loaded machine reaches before the check (seen under a CPU hog on every core).
    Schedule.objects.filter(task_path__in=paths).update(
        next_run_at=F("covered_until") + timedelta(minutes=1)
    )
    check = execute(due_schedules(paths))
    assert check.due == []
    assert check.next_due_at is not None and check.next_due_at > check.now
    Schedule.objects.filter(task_path=tick.module_path).update(
        next_run_at=F("covered_until") - timedelta(seconds=1)
    )
    due = execute(due_schedules(paths)).due
    assert [d.task_path for d in due] == [tick.module_path]


# System checks: a bad schedule fails at startup, naming the task.


def run_manage(*args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings",
        "PYTHONPATH": str(ROOT),
        "LEASEQUEUE_TEST_APPS": "tests.periodic.invalid",
    }
    return subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


EXPECTED_ERRORS = [
    ("leasequeue.E020", "tests.periodic.invalid.tasks.bad_cron", "cron '61 * * * *' is invalid"),
    ("leasequeue.E020", "tests.periodic.invalid.tasks.zero_interval", "at least 1 second"),
    ("leasequeue.E020", "tests.periodic.invalid.tasks.too_often", "at least 1 second"),
    (
        "leasequeue.E020",
        "tests.periodic.invalid.tasks.timezone_without_cron",
        "cron_timezone='Europe/Paris' without cron or every",
    ),
    (
        "leasequeue.E020",
        "tests.periodic.invalid.tasks.catch_up_without_a_schedule",
        "catch_up=3 without cron or every",
    ),
    ("leasequeue.E021", "tests.periodic.invalid.tasks.needs_an_argument", "needs user_id"),
]


def test_check_reports_each_bad_schedule_by_name():
    result = run_manage("check")
    assert result.returncode != 0
    for check_id, path, message in EXPECTED_ERRORS:
        line = next(
            (line for line in result.stderr.splitlines() if f"Scheduled task {path}:" in line),
            None,
        )
        assert line is not None, result.stderr
        assert check_id in line and message in line, line


def test_runworkers_refuses_to_start_with_a_bad_schedule():
    result = run_manage("runworkers", "--burst")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    for check_id, path, _ in EXPECTED_ERRORS:
        assert check_id in output and path in output, output
    assert "Started worker process" not in output


# The Schedules admin page, through Django's test client.

SCHEDULES = "/admin/leasequeue/schedule/"


def act(client, action: str, *schedules: Schedule):
    return client.post(
        SCHEDULES,
        {"action": action, "_selected_action": [schedule.pk for schedule in schedules]},
        follow=True,
    )


def test_the_page_lists_schedules_in_words_with_their_last_job(admin_client, backend):
    sync(tick, slow_tick)
    Schedule.objects.create(
        task_path="myapp.tasks.gone", backend="default", cron="*/5 * * * *",
        cron_timezone="Europe/Paris", retired=True,
    )  # fmt: skip
    job_id = run_now(backend.enqueuer, declaration_of(tick))
    page = html.unescape(admin_client.get(SCHEDULES).content.decode())
    assert "Every second" in page and "every=timedelta(seconds=1)" in page
    assert "Every 5 minutes (Europe/Paris)" in page and 'cron="*/5 * * * *"' in page
    assert "retired: no longer in the code" in page
    assert f"/admin/leasequeue/job/{job_id}/change/" in page and "Queued" in page


def shown(response) -> list[tuple[str, str]]:
    """The messages on the page as the operator sees them (after the admin's capfirst)."""
    found = re.findall(r'<li class="(\w+)">(.*?)</li>', response.content.decode())
    return [(level, html.unescape(re.sub(r"<[^>]+>", "", text))) for level, text in found]


def test_pause_resume_and_run_now_actions(admin_client):
    sync(slow_tick)
    schedule = Schedule.objects.get(task_path=slow_tick.module_path)
    path = slow_tick.module_path
    response = act(admin_client, "pause_schedules", schedule)
    assert shown(response) == [("success", f"1 schedule paused ({path})")]
    paused = Schedule.objects.get(pk=schedule.pk)
    assert paused.paused and paused.version > schedule.version

    page = act(admin_client, "run_schedules_now", schedule)
    job = Job.objects.get(task_path=path)
    assert shown(page) == [("success", f"1 job enqueued ({path}: job {job.id})")]
    assert f'/admin/leasequeue/job/{job.id}/change/">job {job.id}</a>' in page.content.decode()
    page = act(admin_client, "run_schedules_now", schedule)
    assert shown(page) == [
        (
            "warning",
            f"0 jobs enqueued; 1 skipped: its previous run is unfinished (overlap: skip) ({path})",
        )
    ]
    assert Job.objects.filter(task_path=path).count() == 1

    Schedule.objects.filter(pk=schedule.pk).update(
        covered_until=F("covered_until") - timedelta(hours=1)
    )
    response = act(admin_client, "resume_schedules", schedule)
    assert shown(response) == [("success", f"1 schedule resumed ({path})")]
    resumed = Schedule.objects.get(pk=schedule.pk)
    assert not resumed.paused
    # Ticks that passed while paused are not caught up: the schedule starts again now.
    assert resumed.covered_until > paused.covered_until
    assert resumed.next_run_at <= execute(database_now())


def test_a_mixed_selection_names_what_was_skipped_and_why(admin_client):
    sync(tick, slow_tick, allowed_tick)
    Schedule.objects.create(
        task_path="myapp.tasks.gone", backend="default", every=timedelta(minutes=5),
        retired=True,
    )  # fmt: skip
    rows = {row.task_path: row for row in Schedule.objects.all()}
    tick_path, slow_path, allowed_path = (
        tick.module_path,
        slow_tick.module_path,
        allowed_tick.module_path,
    )
    act(admin_client, "pause_schedules", rows[tick_path])

    response = act(admin_client, "pause_schedules", *rows.values())
    assert shown(response) == [
        (
            "warning",
            f"2 schedules paused ({', '.join(sorted([slow_path, allowed_path]))}); 2 skipped: "
            f"already paused "
            f"({tick_path}); retired: no longer in the code (myapp.tasks.gone)",
        )
    ]
    assert {row.task_path for row in Schedule.objects.filter(paused=True)} == {
        tick_path, slow_path, allowed_path,
    }  # fmt: skip

    Schedule.objects.filter(task_path=slow_path).update(paused=False)
    response = act(admin_client, "resume_schedules", rows[tick_path], rows[slow_path])
    assert shown(response) == [
        ("warning", f"1 schedule resumed ({tick_path}); 1 skipped: not paused ({slow_path})")
    ]


def test_messages_keep_the_task_paths_case(admin_client):
    """Django's admin capitalises a message's first letter: none starts with a task path."""
    sync(slow_tick)
    schedule = Schedule.objects.get(task_path=slow_tick.module_path)
    for action in ("pause_schedules", "run_schedules_now", "run_schedules_now", "pause_schedules"):
        for _level, text in shown(act(admin_client, action, schedule)):
            assert text[0].isdigit() and "Tests." not in text, text


def test_a_retired_schedule_cannot_run_and_only_it_can_be_deleted(admin_client):
    sync(tick, slow_tick)
    sync(tick)
    retired = Schedule.objects.get(task_path=slow_tick.module_path)
    live = Schedule.objects.get(task_path=tick.module_path)
    page = act(admin_client, "run_schedules_now", retired)
    assert shown(page) == [
        (
            "warning",
            f"0 jobs enqueued; 1 skipped: not in the code: it cannot run ({slow_tick.module_path})",
        )
    ]
    assert not Job.objects.exists()
    assert admin_client.get(f"{SCHEDULES}{retired.pk}/delete/").status_code == 200
    assert admin_client.get(f"{SCHEDULES}{live.pk}/delete/").status_code == 403


def test_schedule_pages_are_read_only(admin_client):
    sync(tick)
    schedule = Schedule.objects.get(task_path=tick.module_path)
    before = (schedule.version, schedule.covered_until)
    response = admin_client.post(f"{SCHEDULES}{schedule.pk}/change/", {"paused": "on"})
    assert response.status_code == 403
    schedule.refresh_from_db()
    assert (schedule.version, schedule.covered_until, schedule.paused) == (*before, False)
    assert admin_client.get(f"{SCHEDULES}add/").status_code == 403


def test_actions_need_the_change_permission(staff_client):
    sync(tick)
    schedule = Schedule.objects.get(task_path=tick.module_path)
    viewer = staff_client("view_schedule")
    assert viewer.get(SCHEDULES).status_code == 200
    for action in ("pause_schedules", "resume_schedules", "run_schedules_now"):
        # Told, not left guessing: the page comes back with the reason.
        assert shown(act(viewer, action, schedule)) == [
            (
                "error",
                "Nothing was changed: pausing, resuming and running schedules needs the "
                "“Can change schedule” permission, and you may only view them.",
            )
        ]
    schedule.refresh_from_db()
    assert not schedule.paused and not Job.objects.exists()
    assert staff_client().get(SCHEDULES).status_code == 403

    operator = staff_client("view_schedule", "change_schedule")
    assert shown(act(operator, "pause_schedules", schedule)) == [
        ("success", f"1 schedule paused ({tick.module_path})")
    ]
    schedule.refresh_from_db()
    assert schedule.paused


def test_staff_who_may_not_even_view_schedules_get_a_403_for_an_action(staff_client):
    sync(tick)
    schedule = Schedule.objects.get(task_path=tick.module_path)
    nobody = staff_client()
    for action in ("pause_schedules", "resume_schedules", "run_schedules_now"):
        response = nobody.post(SCHEDULES, {"action": action, "_selected_action": [schedule.pk]})
        assert response.status_code == 403, action
    schedule.refresh_from_db()
    assert not schedule.paused and not Job.objects.exists()


def test_the_list_refuses_lookups_it_does_not_offer(admin_client):
    sync(tick, slow_tick)
    for refused in ("task_path__regex=^t", "version__gt=0", "cron__isnull=1", "paused__exact=%00"):
        assert admin_client.get(f"{SCHEDULES}?{refused}").status_code == 400, refused
    for offered in ("paused__exact=0", "retired__exact=0", "q=every_second", "o=1"):
        response = admin_client.get(f"{SCHEDULES}?{offered}")
        assert response.status_code == 200, offered
        assert tick.module_path in {row.task_path for row in response.context["cl"].result_list}


def test_non_staff_are_sent_to_the_login_page(django_user_model):
    from django.test import Client

    user = django_user_model.objects.create_user("someone", password="pw")
    client = Client()
    client.force_login(user)
    response = client.get(SCHEDULES)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def capped_tick():
    """A schedule whose task has a concurrency cap (declared without the decorator)."""


capped_tick = LeaseTask(func=capped_tick, every=timedelta(seconds=1), concurrency=1)


def test_a_scheduled_job_is_held_to_its_tasks_limits(backend):
    sync(capped_tick)
    fired = fire(backend, capped_tick, next_tick(capped_tick))
    job = Job.objects.get(pk=fired.job_id)
    assert job.concurrency_key == f"task:{capped_tick.module_path}"
    assert job.limits == [{"key": f"task:{capped_tick.module_path}", "concurrency": 1}]
