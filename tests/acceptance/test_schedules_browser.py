"""In headless Chromium, with real ``runworkers`` processes: a staff operator pauses a running
every-second schedule from the Schedules page, no job comes for two ticks, then resumes it and
jobs come again. Saves docs/screenshots/admin-schedules.png.
"""

import time
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import Page, expect, sync_playwright

from django_leasequeue.models import Job, Schedule
from tests.acceptance.browser import launch_chromium
from tests.acceptance.harness import wait_until
from tests.helpers import run_in_threads
from tests.periodic.every_second.tasks import tick

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.crash]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def page(live_server):
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        context = browser.new_context(viewport={"width": 1600, "height": 700})
        context.add_init_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
        context.set_default_timeout(15_000)
        yield context.new_page()
        browser.close()


def _in_thread(query):
    """Run a query on a thread of its own (see test_admin_browser._job)."""
    return run_in_threads(1, lambda _i: query())[0]


def _jobs_enqueued_after(moment) -> int:
    return _in_thread(
        lambda: Job.objects.filter(task_path=tick.module_path, enqueued_at__gt=moment).count()
    )


def _db_now():
    from django.db import connection

    def now():
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            return cursor.fetchone()[0]

    return _in_thread(now)


def _apply(page: Page, action: str) -> None:
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", action)
    page.click("button[name=index]")


@pytest.fixture
def operator(django_user_model) -> None:
    """Staff who may view and change schedules (created before Playwright's loop runs)."""
    user = django_user_model.objects.create_user("operator", password="night-shift", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="leasequeue",
            codename__in=["view_schedule", "change_schedule", "view_job"],
        )
    )


def test_operator_pauses_and_resumes_a_schedule(operator, page, live_server, start_workers):
    start_workers(
        "--processes", "2", "--concurrency", "4",
        env={"LEASEQUEUE_TEST_APPS": "tests.periodic.every_second"},
    )  # fmt: skip
    wait_until(
        lambda: _in_thread(lambda: Job.objects.filter(task_path=tick.module_path).count()) >= 3,
        90,
        "the first ticks",
    )

    page.goto(f"{live_server.url}/admin/login/?next=/admin/leasequeue/schedule/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "night-shift")
    page.click("input[type=submit]")
    row = page.locator("#result_list tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(tick.module_path)
    expect(row).to_contain_text("Every second")
    expect(row).to_contain_text("active")
    expect(row.locator("a[href*='/admin/leasequeue/job/']")).to_have_count(1)  # the last run
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "admin-schedules.png", full_page=True)

    _apply(page, "pause_schedules")
    expect(page.locator("ul.messagelist")).to_have_text(f"1 schedule paused ({tick.module_path})")
    paused_at = _db_now()
    expect(row).to_contain_text("paused")
    time.sleep(2.5)  # two ticks, and a margin for a loaded machine
    assert _jobs_enqueued_after(paused_at) == 0
    assert _in_thread(lambda: Schedule.objects.get(task_path=tick.module_path).paused)

    _apply(page, "resume_schedules")
    expect(page.locator("ul.messagelist")).to_have_text(f"1 schedule resumed ({tick.module_path})")
    resumed_at = _db_now()
    wait_until(lambda: _jobs_enqueued_after(resumed_at) >= 2, 10, "jobs again after resume")
    page.reload()
    expect(row).to_contain_text("active")
