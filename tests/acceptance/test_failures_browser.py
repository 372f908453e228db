"""End to end in headless Chromium: an operator opens the failures page, sees the failed jobs
grouped by task and exception class, follows a group to its jobs, retries a whole group, and
finds a job by its argument in the job list. Takes the screenshot docs/admin.md shows
(``admin-failures.png``; see browser.screenshot_path: tests write it to their temporary
directory unless ``LEASEQUEUE_UPDATE_SCREENSHOTS=1``).
"""

import pytest
from playwright.sync_api import expect

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from tests.acceptance.browser import log_in, make_operator, screenshot_path
from tests.support.helpers import claim_one, in_a_thread
from tests.support.tasks.basic import add, quick_retry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

FAILURES = "/admin/leasequeue/job/failures/"


def _fail(job_id, exception: str, message: str) -> None:
    claimed = claim_one(job_id, "host-a:204")
    outcome = execute(
        jobs_sql.fail(
            claimed.lease,
            exception_class_path=exception,
            message=message,
            traceback=(
                "Traceback (most recent call last):\n"
                '  File "/srv/app/billing.py", line 42, in charge\n'
                f"{exception}: {message}\n"
            ),
            retryable=False,
            backoff_cap_seconds=60,
        )
    )
    assert outcome.status == "failed"


@pytest.fixture
def unreachable_ids() -> list[str]:
    """An operator who may retry, and three groups of failed jobs; returns the largest's ids."""
    make_operator("view_job", "change_job")
    unreachable = []
    for invoice in range(3):
        job_id = add.enqueue(a=invoice, b=42).id
        _fail(job_id, "builtins.ConnectionError", f"payments API unreachable (invoice {invoice})")
        unreachable.append(str(job_id))
    for n in range(2):
        _fail(quick_retry.enqueue(n).id, "builtins.KeyError", "'customer'")
    _fail(add.enqueue(a=7, b=7).id, "app.errors.PaymentDeclined", "card declined")
    add.enqueue(a=1, b=1)  # waiting: in no group
    return unreachable


def test_operator_retries_a_failure_group_and_finds_a_job_by_argument(
    unreachable_ids, open_page, live_server, tmp_path
):
    page = open_page(viewport={"width": 1500, "height": 700}, admin_sidebar=False)
    log_in(page, live_server.url, FAILURES)
    groups = page.locator("tr.lq-failure-group")
    expect(groups).to_have_count(3)
    biggest = groups.first
    expect(biggest).to_contain_text("tests.support.tasks.basic.add")
    expect(biggest).to_contain_text("builtins.ConnectionError")
    expect(biggest).to_contain_text("payments API unreachable (invoice 2)")  # the newest
    expect(biggest.locator("td.lq-num")).to_have_text("3")
    page.screenshot(path=screenshot_path("admin-failures.png", tmp_path), full_page=True)

    # The count links to the group's jobs in the list.
    biggest.locator("td.lq-num a").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    page.go_back()

    # Retry the whole group.
    page.locator("tr.lq-failure-group").first.get_by_role("button", name="Retry all 3 jobs").click()
    expect(page.locator("ul.messagelist")).to_have_text("3 jobs retried")
    expect(page.locator("tr.lq-failure-group")).to_have_count(2)
    statuses = in_a_thread(
        lambda: set(Job.objects.filter(pk__in=unreachable_ids).values_list("status", flat=True))
    )
    assert statuses == {"queued"}

    # The job list's search box finds a job by its argument.
    page.goto(f"{live_server.url}/admin/leasequeue/job/")
    page.fill("#searchbar", "a=2 b=42")
    page.press("#searchbar", "Enter")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("th code")).to_have_attribute("title", unreachable_ids[2])
    expect(page.locator(".lq-argument-search")).to_contain_text("last 24h")
    page.locator(".lq-argument-search").get_by_role("link", name="7d").click()
    expect(page.locator(".lq-argument-search strong")).to_have_text("7d")
    expect(rows).to_have_count(1)
