"""In headless Chromium: an operator pauses a queue from the job list's summary, sees its jobs
wait while a real worker runs, and resumes it."""

import time

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect, sync_playwright

from django_leasequeue.models import Job
from tests.acceptance.browser import launch_chromium
from tests.helpers import run_in_threads
from tests.tasks import add

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _status(job_id: str) -> str:
    """On a thread of its own, which closes its connection (see test_admin_browser._job)."""
    return run_in_threads(1, lambda _i: Job.objects.get(pk=job_id).status)[0]


def test_an_operator_pauses_a_queue_then_resumes_it(django_user_model, live_server, start_workers):
    user = django_user_model.objects.create_user("operator", password="night-shift", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="leasequeue", codename__in=["view_job", "pause_queue"]
        )
    )
    add.using(queue_name="other").enqueue(0, 0)  # the queue has a row in the summary
    start_workers("--queues", "*")
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(15_000)
        page.goto(f"{live_server.url}/admin/login/?next=/admin/leasequeue/job/")
        page.fill("#id_username", "operator")
        page.fill("#id_password", "night-shift")
        page.click("input[type=submit]")

        row = page.locator(".lq-summary tbody tr", has_text="other")
        row.get_by_role("textbox").fill("payments API down")
        row.get_by_role("button", name="Pause").click()
        expect(page.locator("ul.messagelist")).to_contain_text("Queue “other” paused")
        row = page.locator(".lq-summary tbody tr", has_text="other")
        expect(row).to_contain_text("Paused")
        expect(row).to_contain_text("payments API down")

        [waiting] = run_in_threads(1, lambda _i: add.using(queue_name="other").enqueue(1, 2).id)
        time.sleep(1.5)  # the worker polls several times meanwhile
        assert _status(waiting) == "queued"

        row.get_by_role("button", name="Resume").click()
        expect(page.locator("ul.messagelist")).to_contain_text("Queue “other” resumed")
        expect(page.locator(".lq-summary tbody tr", has_text="other")).to_contain_text("open")
        browser.close()
    deadline = time.monotonic() + 10
    while _status(waiting) != "succeeded":
        assert time.monotonic() < deadline, "the resumed job did not run"
        time.sleep(0.05)
