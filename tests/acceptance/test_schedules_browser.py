"""In headless Chromium, with real ``runworkers`` processes: a staff operator pauses a running
every-second schedule from the Schedules page, no job comes for two ticks, then resumes it and
jobs come again. Takes docs/screenshots/admin-schedules.png (see browser.screenshot_path).
"""

import time

import pytest
from playwright.sync_api import Page, expect

from django_leasequeue.models import Job, Schedule
from tests.acceptance.browser import log_in, make_operator, screenshot_path
from tests.acceptance.harness import wait_until
from tests.periodic.every_second.tasks import tick
from tests.support.helpers import in_a_thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.crash]


def _jobs_enqueued_after(moment) -> int:
    return in_a_thread(
        lambda: Job.objects.filter(task_path=tick.module_path, enqueued_at__gt=moment).count()
    )


def _db_now():
    from django.db import connection

    def now():
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            return cursor.fetchone()[0]

    return in_a_thread(now)


def _apply(page: Page, action: str) -> None:
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")


@pytest.fixture
def operator() -> None:
    """Staff who may view and change schedules (created before Playwright's loop runs)."""
    make_operator("view_schedule", "change_schedule", "view_job")


def test_operator_pauses_and_resumes_a_schedule(
    operator, open_page, live_server, start_workers, tmp_path
):
    start_workers(
        "--processes", "2", "--concurrency", "4",
        env={"LEASEQUEUE_TEST_APPS": "tests.periodic.every_second"},
    )  # fmt: skip
    wait_until(
        lambda: in_a_thread(lambda: Job.objects.filter(task_path=tick.module_path).count()) >= 3,
        90,
        "the first ticks",
    )

    page = open_page(viewport={"width": 1600, "height": 700}, admin_sidebar=False)
    log_in(page, live_server.url, "/admin/leasequeue/schedule/")
    row = page.locator("#result_list tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(tick.module_path)
    expect(row).to_contain_text("Every second")
    expect(row).to_contain_text("active")
    expect(row.locator("a[href*='/admin/leasequeue/job/']")).to_have_count(1)  # the last run
    page.screenshot(path=screenshot_path("admin-schedules.png", tmp_path), full_page=True)

    _apply(page, "pause_schedules")
    expect(page.locator("ul.messagelist")).to_have_text(f"1 schedule paused ({tick.module_path})")
    paused_at = _db_now()
    expect(row).to_contain_text("paused")
    time.sleep(2.5)  # two ticks, and a margin for a loaded machine
    assert _jobs_enqueued_after(paused_at) == 0
    assert in_a_thread(lambda: Schedule.objects.get(task_path=tick.module_path).paused)

    _apply(page, "resume_schedules")
    expect(page.locator("ul.messagelist")).to_have_text(f"1 schedule resumed ({tick.module_path})")
    resumed_at = _db_now()
    wait_until(lambda: _jobs_enqueued_after(resumed_at) >= 2, 10, "jobs again after resume")
    page.reload()
    expect(row).to_contain_text("active")
