"""End to end in headless Chromium: a staff member finds a failed job, retries it, and sees a real
``runworkers`` process run it to success. Saves the screenshots in docs/screenshots/.
"""

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import Page, expect, sync_playwright

from django_leasequeue import protocol
from django_leasequeue.models import Job
from tests.acceptance.browser import launch_chromium
from tests.helpers import claim_one, run_in_threads
from tests.tasks import add, reports_progress

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def page(live_server):
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        context = browser.new_context(viewport={"width": 1800, "height": 1000})
        # The admin's navigation sidebar folded away: the job list gets the width.
        context.add_init_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
        context.set_default_timeout(15_000)
        yield context.new_page()
        browser.close()


def _job(job_id: str) -> Job:
    """Read the job on a thread of its own, which closes its connection.

    Under Playwright's sync API the test body runs in another context than the fixtures, so a
    query made there would open a connection that nothing closes.
    """
    return run_in_threads(1, lambda _i: Job.objects.get(pk=job_id))[0]


@pytest.fixture
def failed_id(django_user_model) -> str:
    """A staff operator, and jobs in every state; returns the failed job's id."""
    _staff(django_user_model)
    return _jobs_in_every_state()


def _staff(django_user_model) -> None:
    user = django_user_model.objects.create_user("operator", password="night-shift", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="leasequeue", codename__in=["view_job", "change_job"]
        )
    )


def _jobs_in_every_state() -> str:
    """Jobs the list shows; returns the id of the failed one the operator will retry."""
    for i in range(3):
        done = claim_one(add.using(queue_name="low").enqueue(i, i).id, "host-b:311")
        protocol.execute(protocol.complete(done.lease, i + i))
    busy = claim_one(reports_progress.using(queue_name="high").enqueue(100).id, "host-a:204")
    protocol.execute(protocol.progress(busy.lease, 40, 100, "rows copied"))
    claim_one(add.using(queue_name="other").enqueue(7, 7).id, "host-c:99", lease_seconds=0.01)
    add.using(queue_name="high", priority=5).enqueue(2, 2)
    cancelled = add.using(queue_name="low").enqueue(3, 3)
    protocol.execute(protocol.cancel([cancelled.id]))

    failing = claim_one(add.enqueue(20, 22).id, "host-a:204")
    outcome = protocol.execute(
        protocol.fail(
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


def _log_in(page: Page, base_url: str) -> None:
    page.goto(f"{base_url}/admin/login/?next=/admin/leasequeue/job/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "night-shift")
    page.click("input[type=submit]")
    expect(page.locator("#lq-summary-title")).to_have_text("Queues")


def test_operator_retries_a_failed_job_and_sees_it_succeed(
    failed_id, page, live_server, start_workers
):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    _log_in(page, live_server.url)
    expect(page.locator("#result_list")).to_contain_text("expired")  # the dead worker's job
    expect(page.locator("#result_list")).to_contain_text("40% · rows copied")
    page.screenshot(path=SCREENSHOTS / "admin-list.png", full_page=True)

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
    page.screenshot(path=SCREENSHOTS / "admin-detail.png", full_page=True)

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
    django_user_model, live_server, width, sidebar
):
    """Every column, the lease ones included, is on screen; long task paths, worker ids and
    progress messages are shortened, whole in their tooltip."""
    _staff(django_user_model)
    _jobs_in_every_state()
    long_path = claim_one(
        add.using(queue_name="other").enqueue(1, 1).id,
        "a-very-long-host-name.eu-west-1.compute.internal:123456:w12:abcdef",
    )
    protocol.execute(protocol.progress(long_path.lease, 3, 10, "a long progress message " * 6))
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        context = browser.new_context(viewport={"width": width, "height": 900})
        is_open = "true" if sidebar == "open" else "false"
        context.add_init_script(
            f"localStorage.setItem('django.admin.navSidebarIsOpen', '{is_open}')"
        )
        page = context.new_page()
        _log_in(page, live_server.url)
        sizes = page.evaluate(MEASURE_WIDTHS)
        if width == 1280 and sidebar == "open":  # the narrowest: docs show what gives way
            page.screenshot(path=SCREENSHOTS / "admin-list-1280.png")
        worker = page.locator("#result_list td.field-worker", has_text="a-very-long").first
        worker_title = worker.locator("[title]").get_attribute("title")
        browser.close()
    assert sizes["page"][0] <= sizes["page"][1], sizes
    assert sizes["results"][0] <= sizes["results"][1], sizes
    assert sizes["leaseRight"] <= sizes["viewport"], sizes
    assert worker_title == "a-very-long-host-name.eu-west-1.compute.internal:123456:w12:abcdef"
