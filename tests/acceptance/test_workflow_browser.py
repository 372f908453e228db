"""End to end in headless Chromium: a user starts the demo's import workflow, watches its one
bar move to 100% over its websocket (steps finished, and the running ones' own progress, in
between), then an operator finds it succeeded on its admin page, graph included. Real daphne,
real ``runworkers`` processes, events carried by channels-redis.

Screenshots go to a temporary directory; ``LEASEQUEUE_UPDATE_SCREENSHOTS=1`` writes them to
docs/screenshots/ (demo-workflow.png, admin-workflow.png).
"""

import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from playwright.sync_api import Page

from tests.acceptance.asgi_server import Daphne
from tests.acceptance.browser import screenshot_path
from tests.acceptance.harness import LIVE_PROGRESS_OPTIONS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

WORKFLOW_BAR = "[data-workflow-bar] .leasequeue-progress"

# Records, inside the page, every value the workflow's bar shows, and a marker a reload erases.
RECORD_BAR_VALUES = """
window.__loadedOnce = true;
window.__barValues = [];
const track = document.querySelector('[data-workflow-bar] [role=progressbar]');
new MutationObserver(() => {
  const value = track.getAttribute('aria-valuenow');
  if (value !== null && window.__barValues.at(-1) !== Number(value)) {
    window.__barValues.push(Number(value));
  }
}).observe(track, {attributes: true});
"""


@pytest.fixture
def demo_site(tmp_path) -> Iterator[Daphne]:
    server = Daphne(tmp_path / "daphne.log", settings="tests.support.settings.demo").start()
    yield server
    server.stop()


def _operator_session() -> str:
    """A staff user of the demo who may see jobs and workflows in the admin; their session."""
    user = User.objects.create_user("operator", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_job", "view_workflowrun"])
    )
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _text(page: Page, bar: str, part: str) -> str:
    return page.locator(f"{bar} .leasequeue-progress__{part}").first.inner_text().strip()


def test_the_demo_import_moves_live_to_100_percent_and_its_admin_page_shows_it_succeeded(
    open_page, demo_site, start_workers, tmp_path
):
    session = _operator_session()
    page = open_page(viewport={"width": 1100, "height": 900}, reduced_motion="reduce")
    context = page.context
    context.add_cookies([{"name": "sessionid", "value": session, "url": demo_site.url}])
    sockets = []
    page.on("websocket", lambda socket: sockets.append(socket.url))

    page.goto(f"{demo_site.url}/")
    page.get_by_role("button", name="Start an import").click()
    page.wait_for_url(re.compile(r"/imports/[0-9a-f-]{36}/$"))
    workflow_id = page.url.rstrip("/").rsplit("/", 1)[1]
    page.evaluate(RECORD_BAR_VALUES)
    # The steps start once the page watches: a slow page load must not miss them running.
    start_workers("--concurrency", "4", options=LIVE_PROGRESS_OPTIONS)

    # Midway, the operator opens the workflow's page in the admin: the graph, mid-run.
    page.wait_for_function(
        "Number(document.querySelector('[data-workflow-bar] [role=progressbar]')"
        ".getAttribute('aria-valuenow')) >= 30",
        timeout=60_000,
    )
    assert _text(page, WORKFLOW_BAR, "status") == "Running"
    page.screenshot(path=screenshot_path("demo-workflow.png", tmp_path), full_page=True)
    admin = context.new_page()
    admin.goto(f"{demo_site.url}/admin/leasequeue/workflowrun/{workflow_id}/change/")
    assert admin.locator("svg.lq-graph a.lq-node").count() == 5
    admin.screenshot(path=screenshot_path("admin-workflow.png", tmp_path), full_page=True)

    page.wait_for_function(
        f"document.querySelector('{WORKFLOW_BAR}').dataset.final === 'true'", timeout=60_000
    )
    assert page.get_attribute(f"{WORKFLOW_BAR} [role=progressbar]", "aria-valuenow") == "100"
    assert _text(page, WORKFLOW_BAR, "percent") == "100%"
    assert _text(page, WORKFLOW_BAR, "status") == "Succeeded"
    assert _text(page, WORKFLOW_BAR, "message") == "5 of 5 steps finished"
    assert page.evaluate("window.__loadedOnce") is True, "the page was reloaded"
    values = page.evaluate("window.__barValues")
    assert values == sorted(values) and values[-1] == 100, values
    # The bar moved while the steps ran, and running steps count in part: it stopped between
    # the whole steps' 20% marks. (How many stops it makes depends on the machine's load: a
    # loaded one coalesced updates into [0, 37, 60, 100].)
    assert 0 < values[1] < 100 and any(value % 20 for value in values), values
    report = page.locator("[data-report]")
    report.filter(has_text="Imported").wait_for()
    assert report.inner_text() == "Imported 375 records from profiles, projects, reviews."
    step_bars = page.locator("[data-step] .leasequeue-progress")
    assert step_bars.count() == 5
    for index in range(5):
        step_bars.nth(index).and_(page.locator("[data-status=succeeded]")).wait_for()
    workflow_sockets = [url for url in sockets if "/ws/leasequeue/workflows/" in url]
    assert len(workflow_sockets) == 1 and f"/workflows/{workflow_id}/?token=" in workflow_sockets[0]

    admin.reload()
    assert admin.locator(".field-status_display .lq-status").inner_text().strip() == "✔ Succeeded"
    nodes = admin.locator("svg.lq-graph a.lq-node")
    assert nodes.count() == 5
    assert admin.locator("svg.lq-graph a.lq-node-succeeded").count() == 5
    merge = admin.locator("svg.lq-graph a[data-step=merge_sources]")
    merge.click()
    admin.wait_for_url(re.compile(r"/admin/leasequeue/job/[0-9a-f-]{36}/change/$"))
    assert admin.get_by_role("link", name="Nightly import").count() == 1
