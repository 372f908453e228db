"""In headless Chromium: an operator pauses a queue from the job list's summary, sees its jobs
wait while a real worker runs, and resumes it."""

import time

import pytest
from playwright.sync_api import expect

from django_leasequeue.models import Job
from tests.acceptance.browser import log_in, make_operator
from tests.support.helpers import run_in_threads
from tests.support.tasks.basic import add

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _status(job_id: str) -> str:
    """On a thread of its own, which closes its connection (see test_admin_browser._job)."""
    return run_in_threads(1, lambda _i: Job.objects.get(pk=job_id).status)[0]


def test_an_operator_pauses_a_queue_then_resumes_it(open_page, live_server, start_workers):
    make_operator("view_job", "pause_queue")
    add.using(queue_name="other").enqueue(0, 0)  # the queue has a row in the summary
    start_workers("--queues", "*")
    page = open_page(viewport={"width": 1600, "height": 1000})
    log_in(page, live_server.url)

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
    deadline = time.monotonic() + 10
    while _status(waiting) != "succeeded":
        assert time.monotonic() < deadline, "the resumed job did not run"
        time.sleep(0.05)
