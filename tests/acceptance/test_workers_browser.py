"""In headless Chromium: an operator opens the Workers page while real ``runworkers`` processes
run, and follows a running job to the worker holding it. Takes docs/screenshots/admin-workers.png
(see browser.screenshot_path).
"""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from django_leasequeue.models import Job, Worker
from tests.acceptance.browser import log_in, make_operator, screenshot_path
from tests.acceptance.harness import wait_until
from tests.support.tasks.basic import add, async_sleep

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.crash]


def test_operator_sees_the_workers_and_follows_a_job_to_its_worker(
    live_server, start_workers, open_page, tmp_path
):
    make_operator("view_job", "view_worker")
    now = timezone.now()
    Worker.objects.create(
        id="web-2:8812:w0:5c1d2e",
        host="web-2",
        pid=8812,
        queues=["emails"],
        concurrency=20,
        lease_seconds=30,
        started_at=now - timedelta(hours=5),
        heartbeat_at=now - timedelta(minutes=12),
        jobs_done=48213,
        stopped_at=now - timedelta(minutes=12),
        exit="killed by SIGKILL",
    )
    start_workers("--processes", "2", "--queues", "*", "--concurrency", "8")
    ids = [add.enqueue(i, i).id for i in range(30)]
    busy = async_sleep.enqueue(60).id
    wait_until(lambda: Job.objects.filter(pk__in=ids, status="succeeded").count() == 30, 30, "jobs")
    wait_until(lambda: Job.objects.get(pk=busy).status == "running", 20, "a running job")
    wait_until(lambda: Worker.objects.filter(jobs_running=1).exists(), 10, "the registry refreshed")
    holder = Job.objects.get(pk=busy).worker_id

    page = open_page(viewport={"width": 1600, "height": 700}, admin_sidebar=False)
    log_in(page, live_server.url, "/admin/leasequeue/worker/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator(".lq-worker-alive")).to_have_count(2)
    expect(page.locator(".lq-worker-dead")).to_have_text("✖ Dead")
    expect(page.locator("#result_list")).to_contain_text("killed by SIGKILL")
    page.screenshot(path=screenshot_path("admin-workers.png", tmp_path), full_page=True)

    page.goto(f"{live_server.url}/admin/leasequeue/job/{busy}/change/")
    page.get_by_role("link", name=holder).first.click()
    expect(page.locator("h2, h1").filter(has_text=holder).first).to_be_visible()
    expect(page.locator(".field-state_display")).to_contain_text("Alive")
    expect(page.locator(".field-jobs_running")).to_contain_text("1")
