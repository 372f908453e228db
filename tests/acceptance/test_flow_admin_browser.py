"""Flow control as a staff member sees it in headless Chromium: each limit with what it uses,
and a job a limit holds back saying why it waits instead of looking stuck."""

import pytest
from playwright.sync_api import expect

from tests.acceptance.browser import log_in, make_operator, screenshot_path
from tests.support.helpers import claim_limited
from tests.support.tasks import flow as flow_tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def held_jobs():
    """A staff operator; a concurrency=1 task with its slot taken, a 1/h task that just started
    once, and the llm queue (concurrency 2) at its cap. Returns a job waiting for a slot."""
    make_operator("view_job", "change_job")
    waiting = [flow_tasks.single_slot.enqueue(n, 0).id for n in range(3)]
    [flow_tasks.hourly.enqueue(n) for n in range(2)]
    [flow_tasks.llm_call.enqueue(user_id, 0, 0) for user_id in range(4)]
    claimed = claim_limited(free=10)
    assert len(claimed) == 1 + 1 + 2  # one slot, one rate token, the queue's two slots
    return next(job_id for job_id in waiting if job_id not in {str(job.id) for job in claimed})


def test_staff_see_each_limit_and_why_a_job_waits(held_jobs, open_page, live_server, tmp_path):
    page = open_page(viewport={"width": 1800, "height": 1000}, admin_sidebar=False)
    log_in(page, live_server.url)
    flow = page.locator(".lq-flow")
    expect(flow.locator("h2")).to_have_text("Flow control")
    llm = flow.locator(".lq-queue-limits tbody tr", has_text="llm")
    expect(llm).to_contain_text("2 / 2")
    expect(llm).to_contain_text("4 / 1000")  # unfinished of max_pending
    single = flow.locator(".lq-partitions tbody tr", has_text="single_slot")
    expect(single).to_contain_text("concurrency 1")
    expect(single).to_contain_text("waiting for a concurrency slot (1/1 running)")
    hourly = flow.locator(".lq-partitions tbody tr", has_text="hourly")
    expect(hourly).to_contain_text("1/h")
    expect(hourly).to_contain_text("rate limited until")

    rows = page.locator("#result_list tbody tr")
    expect(rows.filter(has_text="waiting for a concurrency slot (1/1 running)")).to_have_count(2)
    expect(rows.filter(has_text="rate limited until")).to_have_count(1)
    expect(rows.filter(has_text="waiting for a slot of queue llm (2/2 running)")).to_have_count(2)
    page.screenshot(path=screenshot_path("admin-flow-control.png", tmp_path), full_page=True)

    page.goto(f"{live_server.url}/admin/leasequeue/job/{held_jobs}/change/")
    expect(page.locator(".fieldBox.field-status_display .readonly")).to_contain_text(
        "waiting for a concurrency slot (1/1 running)"
    )
