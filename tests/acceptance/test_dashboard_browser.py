"""In headless Chromium: an operator opens the dashboard while a real worker runs, reads the
charts (a title on every point), and sees jobs that finish while the page is open appear in
them without reloading it. Takes docs/screenshots/admin-dashboard.png (see
browser.screenshot_path: the committed image is rewritten only when asked).
"""

import math
import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from django_leasequeue.models import Job, QueueHistory, QueueHistoryMark
from tests.acceptance.browser import log_in, make_operator, screenshot_path
from tests.support.helpers import run_in_threads
from tests.support.tasks.basic import add

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

DASHBOARD = "/admin/leasequeue/job/dashboard/"
# Sums the jobs the finished chart of a queue shows as succeeded, from its points' titles.
_SUCCEEDED = """queue => [...document.querySelectorAll(
    `section[data-queue="${queue}"] figure:first-of-type rect.lq-point title`)]
    .map(title => Number((title.textContent.match(/(\\d+) succeeded/) || [0, 0])[1]))
    .reduce((sum, n) => sum + n, 0)"""


def _history(minutes_ago: int, count: int, *, status: str = "succeeded") -> None:
    """Jobs of the queue "emails" that finished ``minutes_ago`` (read live from the job table
    while no rollup has run)."""
    finished_at = timezone.now() - timedelta(minutes=minutes_ago)
    Job.objects.bulk_create(
        Job(
            task_path="tests.support.tasks.basic.add",
            queue_name="emails",
            status=status,
            run_after=finished_at - timedelta(milliseconds=40 + n),
            started_at=finished_at - timedelta(milliseconds=25 + n),
            last_attempted_at=finished_at - timedelta(milliseconds=25 + n),
            finished_at=finished_at,
            attempt=1,
        )
        for n in range(count)
    )


def _rolled_up_hour() -> int:
    """An hour of the queue "emails" as the workers' rollup wrote it (its jobs since pruned):
    a slowdown twenty minutes ago, failures, a backlog that grew and drained. Returns how many
    jobs succeeded."""
    now = timezone.now().replace(second=0, microsecond=0)
    rows = []
    for back in range(58, 1, -1):
        trouble = 18 <= back <= 26
        succeeded = int(40 + 25 * math.sin(back / 6)) // (3 if trouble else 1)
        backlog = int(900 * math.sin((26 - back) * math.pi / 16)) if 10 < back <= 26 else 0
        pickup = 18 + 4 * (back % 3) + (14 if trouble else 0)  # bucket 18: ~2.4 ms
        rows.append(
            QueueHistory(
                seconds=60,
                start=now - timedelta(minutes=back),
                queue_name="emails",
                succeeded=succeeded,
                failed=(7 + back % 5) if trouble else int(back % 9 == 0),
                pickup_buckets=[pickup, pickup + 8],
                pickup_counts=[succeeded, 3],
                run_buckets=[48 + back % 4, 56 + (6 if trouble else 0)],
                run_counts=[succeeded, 3],
                backlog=max(backlog, 0),
            )
        )
    QueueHistory.objects.bulk_create(rows)
    QueueHistoryMark.objects.create(id=1, rolled_up_to=now - timedelta(minutes=1))
    return sum(row.succeeded for row in rows)


def _succeeded(page: Page, queue: str) -> int:
    return page.evaluate(_SUCCEEDED, queue)


def test_the_charts_render_and_refresh_while_the_page_is_open(
    open_page, live_server, start_workers, tmp_path
):
    make_operator("view_job")
    succeeded = _rolled_up_hour()
    start_workers("--queues", "*", "--processes", "1")
    page = open_page(viewport={"width": 1500, "height": 1100}, admin_sidebar=False)
    log_in(page, live_server.url, DASHBOARD)

    emails = page.locator('section[data-queue="emails"]')
    expect(emails.locator("svg.lq-chart-svg")).to_have_count(4)
    expect(emails.locator("figcaption").first).to_contain_text("Jobs finished per minute")
    expect(emails.locator("rect.lq-point")).to_have_count(4 * 60)
    assert _succeeded(page, "emails") == succeeded
    troubled = emails.locator("title", has_text=re.compile(r"succeeded, ([7-9]|1[01]) failed"))
    expect(troubled).to_have_count(9)
    backlog = emails.locator("figure").nth(1)
    expect(backlog.locator("title", has_text=re.compile(r": [1-9][\d,]* due"))).to_have_count(15)
    pickup = emails.locator("figure").nth(2)
    expect(pickup.locator("path.lq-line.lq-p50")).to_have_count(1)
    expect(pickup.locator("title", has_text="p50 ").first).to_contain_text("ms")
    assert _succeeded(page, "default") == 0
    page.screenshot(path=screenshot_path("admin-dashboard.png", tmp_path), full_page=True)

    # Jobs finish while the page is open: the next refresh shows them, without a reload.
    page.evaluate("window.stayedOpen = true")
    run_in_threads(1, lambda _i: [add.enqueue(n, n) for n in range(5)])
    deadline = time.monotonic() + 40
    while _succeeded(page, "default") != 5:
        assert time.monotonic() < deadline, "the chart did not show the jobs that finished"
        page.wait_for_timeout(250)
    assert page.evaluate("window.stayedOpen") is True
    assert page.locator("#lq-dashboard").get_attribute("data-refreshed-at")


def test_the_window_links_switch_to_a_day_and_a_week(open_page, live_server):
    make_operator("view_job")
    _history(30, 2)
    page = open_page(viewport={"width": 1300, "height": 900})
    log_in(page, live_server.url, DASHBOARD)
    page.get_by_role("link", name="24h", exact=True).click()
    emails = page.locator('section[data-queue="emails"]')
    expect(emails.locator("figcaption").first).to_contain_text("per 15 minutes")
    expect(emails.locator("rect.lq-point")).to_have_count(4 * 96)
    page.get_by_role("link", name="7d", exact=True).click()
    expect(emails.locator("figcaption").first).to_contain_text("per hour")
    expect(emails.locator("rect.lq-point")).to_have_count(4 * 168)
    assert _succeeded(page, "emails") == 2
