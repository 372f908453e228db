"""End to end in headless Chromium: a staff member finds a failed job, retries it, and sees a real
``runworkers`` process run it to success. Takes the screenshots docs/screenshots/ shows (see
browser.screenshot_path).
"""

import re

import pytest
from playwright.sync_api import expect

from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from tests.acceptance.browser import log_in, make_operator, screenshot_path
from tests.support.helpers import claim_one, in_a_thread
from tests.support.tasks.basic import add, reports_progress

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _job(job_id: str) -> Job:
    return in_a_thread(lambda: Job.objects.get(pk=job_id))


@pytest.fixture
def failed_id() -> str:
    """A staff operator, and jobs in every state; returns the failed job's id."""
    make_operator("view_job", "change_job")
    return _jobs_in_every_state()


def _jobs_in_every_state() -> str:
    """Jobs the list shows; returns the id of the failed one the operator will retry."""
    for i in range(3):
        done = claim_one(add.using(queue_name="low").enqueue(i, i).id, "host-b:311")
        execute(jobs_sql.complete(done.lease, i + i))
    busy = claim_one(reports_progress.using(queue_name="high").enqueue(100).id, "host-a:204")
    execute(jobs_sql.progress(busy.lease, 40, 100, "rows copied"))
    claim_one(add.using(queue_name="other").enqueue(7, 7).id, "host-c:99", lease_seconds=0.01)
    add.using(queue_name="high", priority=5).enqueue(2, 2)
    cancelled = add.using(queue_name="low").enqueue(3, 3)
    execute(operator_actions_sql.cancel([cancelled.id]))

    failing = claim_one(add.enqueue(20, 22).id, "host-a:204")
    outcome = execute(
        jobs_sql.fail(
            failing.lease,
            exception_class_path="builtins.ConnectionError",
            message="payments API unreachable",
            traceback=(
                "Traceback (most recent call last):\n"
                '  File "/srv/app/billing.py", line 42, in charge\n'
                "    gateway.charge(invoice)\n"
                "ConnectionError: payments API unreachable\n"
            ),
            retryable=False,
            backoff_cap_seconds=60,
        )
    )
    assert outcome.status == "failed"
    return str(failing.id)


def test_operator_retries_a_failed_job_and_sees_it_succeed(
    failed_id, open_page, live_server, start_workers, tmp_path
):
    page = open_page(viewport={"width": 1800, "height": 1000}, admin_sidebar=False)
    log_in(page, live_server.url)
    expect(page.locator("#lq-summary-title")).to_have_text("Queues")
    expect(page.locator("#result_list")).to_contain_text("expired")  # the dead worker's job
    expect(page.locator("#result_list")).to_contain_text("40% · rows copied")
    page.screenshot(path=screenshot_path("admin-list.png", tmp_path), full_page=True)

    # Filter failed jobs: only the failed one is listed.
    page.locator("#changelist-filter").get_by_role("link", name="Failed", exact=True).click()
    expect(page).to_have_url(re.compile(r"status__exact=failed"))
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Failed")

    # Retry it from the list.
    page.check(f"input[name=_selected_action][value='{failed_id}']")
    page.select_option("select[name=action]", "retry_jobs")
    page.click("button[name=index]")
    expect(page.locator("ul.messagelist")).to_have_text("1 job retried")
    assert _job(failed_id).status == "queued"

    # A real worker runs what is due on the default queue, then exits.
    workers = start_workers("--burst", "--queues", "default")
    assert workers.process.wait(60) == 0, workers.log()

    page.goto(f"{live_server.url}/admin/leasequeue/job/?q={failed_id}")
    expect(page.locator("#result_list tbody tr")).to_contain_text("Succeeded")
    page.locator("#result_list tbody tr th a").click()
    expect(page.locator(".fieldBox.field-status_display .readonly")).to_contain_text("Succeeded")
    expect(page.locator(".field-result_json .readonly")).to_contain_text("42")
    # The earlier failure stays in the history, traceback and all.
    expect(page.locator(".field-error_history .readonly")).to_contain_text(
        "payments API unreachable"
    )
    expect(page.locator(".field-error_history .readonly")).to_contain_text(
        'File "/srv/app/billing.py"'
    )
    page.screenshot(path=screenshot_path("admin-detail.png", tmp_path), full_page=True)

    job = _job(failed_id)
    assert (job.status, job.result, job.attempt, len(job.errors)) == ("succeeded", 42, 1, 1)


MEASURE_WIDTHS = """() => {
  const results = document.querySelector('#changelist .results');
  const lease = document.querySelector('#result_list th.column-lease');
  return {
    page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    results: [results.scrollWidth, results.clientWidth],
    leaseRight: lease.getBoundingClientRect().right,
    viewport: window.innerWidth,
  };
}"""


@pytest.mark.parametrize("sidebar", ["open", "closed"])
@pytest.mark.parametrize("width", [1280, 1600])
def test_the_job_list_fits_common_screens_without_scrolling(
    open_page, live_server, width, sidebar, tmp_path
):
    """Every column, the lease ones included, is on screen; long task paths, worker ids and
    progress messages are shortened, whole in their tooltip."""
    make_operator("view_job", "change_job")
    _jobs_in_every_state()
    long_path = claim_one(
        add.using(queue_name="other").enqueue(1, 1).id,
        "a-very-long-host-name.eu-west-1.compute.internal:123456:w12:abcdef",
    )
    execute(jobs_sql.progress(long_path.lease, 3, 10, "a long progress message " * 6))
    page = open_page(viewport={"width": width, "height": 900}, admin_sidebar=sidebar == "open")
    log_in(page, live_server.url)
    sizes = page.evaluate(MEASURE_WIDTHS)
    if width == 1280 and sidebar == "open":  # the narrowest: docs show what gives way
        page.screenshot(path=screenshot_path("admin-list-1280.png", tmp_path))
    worker = page.locator("#result_list td.field-worker", has_text="a-very-long").first
    worker_title = worker.locator("[title]").get_attribute("title")
    assert sizes["page"][0] <= sizes["page"][1], sizes
    assert sizes["results"][0] <= sizes["results"][1], sizes
    assert sizes["leaseRight"] <= sizes["viewport"], sizes
    assert worker_title == "a-very-long-host-name.eu-west-1.compute.internal:123456:w12:abcdef"
