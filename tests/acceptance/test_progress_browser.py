"""End to end in headless Chromium: a page with ``{% leasequeue_progress %}`` served by daphne,
jobs run by real ``runworkers`` processes, events carried by channels-redis."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from tests.acceptance.asgi_server import Daphne
from tests.acceptance.browser import screenshot_path
from tests.acceptance.harness import LIVE_PROGRESS_OPTIONS, THROUGH_PGBOUNCER, wait_until
from tests.support.servers import RedisServer
from tests.support.tasks.progress import stepped

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

BAR = ".leasequeue-progress"

# Records, inside the page, every value the bar shows and a marker that a reload would erase.
RECORD_BAR_VALUES = """
window.__loadedOnce = true;
window.__barValues = [];
new MutationObserver(() => {
  const value = document.querySelector('[role=progressbar]').getAttribute('aria-valuenow');
  if (value !== null && window.__barValues.at(-1) !== Number(value)) {
    window.__barValues.push(Number(value));
  }
}).observe(document.querySelector('[role=progressbar]'), {attributes: true});
"""


@pytest.fixture
def daphne(tmp_path) -> Iterator[Daphne]:
    server = Daphne(tmp_path / "daphne.log").start()
    yield server
    server.stop()


def _text(page: Page, part: str) -> str:
    return page.locator(f"{BAR} .leasequeue-progress__{part}").inner_text().strip()


def _assert_finished_live(page: Page, steps: int, *, moves: int = 5) -> None:
    """The bar ended succeeded at 100%, without a reload, after ``moves`` increasing values."""
    page.wait_for_function(
        "document.querySelector('.leasequeue-progress').dataset.final === 'true'",
        timeout=30_000,
    )
    assert page.get_attribute("[role=progressbar]", "aria-valuenow") == "100"
    assert (_text(page, "percent"), _text(page, "status")) == ("100%", "Succeeded")
    assert _text(page, "message") == f"Step {steps} of {steps}"
    assert page.get_attribute(BAR, "data-status") == "succeeded"
    assert page.evaluate("window.__loadedOnce") is True, "the page was reloaded"
    values = page.evaluate("window.__barValues")
    assert values == sorted(values) and len(set(values)) >= moves, values
    assert values[-1] == 100


def test_bar_moves_to_100_percent_over_websocket_without_reload(
    open_page, daphne, start_workers, tmp_path
):
    steps = 20
    job_id = stepped.enqueue(steps, 0.3).id
    # Reduced motion switches the bar's width transition off: the screenshot shows what is true.
    page = open_page(viewport={"width": 760, "height": 300}, reduced_motion="reduce")
    sockets = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.goto(f"{daphne.url}/progress/{job_id}/")
    page.evaluate(RECORD_BAR_VALUES)
    # The job starts once the page watches: a slow page load must not miss it running.
    start_workers("--concurrency", "2", options=LIVE_PROGRESS_OPTIONS)

    page.wait_for_function(
        "Number(document.querySelector('[role=progressbar]').getAttribute('aria-valuenow')) >= 40",
        timeout=30_000,
    )
    assert _text(page, "status") == "Running"
    assert _text(page, "message").startswith("Step ")
    page.screenshot(path=str(screenshot_path("progress-midway.png", tmp_path)))

    _assert_finished_live(page, steps)
    assert len(sockets) == 1 and f"/ws/leasequeue/jobs/{job_id}/?token=" in sockets[0]


def test_bar_falls_back_to_polling_when_websockets_are_unavailable(
    open_page, daphne, start_workers
):
    steps = 10
    job_id = stepped.enqueue(steps, 0.6).id  # polls come once a second
    polls = []
    page = open_page()
    page.add_init_script("delete window.WebSocket;")
    page.on("request", lambda request: polls.append(request) if "/status/" in request.url else None)
    page.goto(f"{daphne.url}/progress/{job_id}/")
    page.evaluate(RECORD_BAR_VALUES)
    # The job starts once the page watches: a slow page load must not miss it running.
    start_workers("--concurrency", "2", options=LIVE_PROGRESS_OPTIONS)

    _assert_finished_live(page, steps, moves=3)
    assert len(polls) >= 3
    # The token travels in a header, never in the URL (which access logs record).
    assert all(poll.url.endswith(f"/leasequeue/jobs/{job_id}/status/") for poll in polls)
    assert all(poll.headers.get("x-leasequeue-token") for poll in polls)


def test_bar_falls_back_to_polling_when_the_channel_layer_is_down(
    open_page, start_workers, tmp_path
):
    """Daphne's channel layer (its Redis) unreachable: each of the page's websocket attempts is
    refused cleanly, not answered with HTTP 500 and a traceback; the outage is one log line,
    and the bar finishes by polling."""
    down = RedisServer()  # never started: nothing listens on its port
    server = Daphne(tmp_path / "daphne-no-layer.log", env={"REDIS_URL": down.url}).start()
    try:
        steps = 10
        job_id = stepped.enqueue(steps, 0.6).id
        sockets, polls = [], []
        page = open_page()
        page.on("websocket", lambda socket: sockets.append(socket))
        page.on("request", lambda r: polls.append(r) if "/status/" in r.url else None)
        page.goto(f"{server.url}/progress/{job_id}/")
        page.evaluate(RECORD_BAR_VALUES)
        # The job starts once the page watches: a slow page load must not miss it running.
        start_workers("--concurrency", "2", options=LIVE_PROGRESS_OPTIONS)

        _assert_finished_live(page, steps, moves=3)
        assert len(sockets) == 3 and polls  # the page's three tries, then polling
        log = server.log()
        assert "Traceback" not in log and " 500 " not in log, log
        assert log.count("The channel layer: live progress of") == 1, log
    finally:
        server.stop()


def test_bar_polls_once_the_channel_layer_fails_under_an_open_socket(
    open_page, start_workers, tmp_path
):
    """The channel layer's Redis dies while the page's websocket is open (or its blocking pop
    times out, as with redis-py 8's default socket timeout on an idle page): the server closes
    the socket with CLOSE_UNAVAILABLE and the bar goes on by polling. Daphne refuses to send
    RFC 6455's 1013 (what was sent before): the socket stayed open and the bar froze."""
    layer = RedisServer().start()
    server = Daphne(tmp_path / "daphne-layer-dies.log", env={"REDIS_URL": layer.url}).start()
    try:
        steps = 10
        job_id = stepped.enqueue(steps, 0.6).id
        sockets, frames, closed, polls = [], [], [], []
        page = open_page()

        def follow(socket):
            sockets.append(socket)
            socket.on("framereceived", lambda frame: frames.append(frame))
            socket.on("close", lambda socket: closed.append(socket))

        page.on("websocket", follow)
        page.on("request", lambda r: polls.append(r) if "/status/" in r.url else None)
        page.goto(f"{server.url}/progress/{job_id}/")
        page.evaluate(RECORD_BAR_VALUES)
        wait_until(lambda: page.wait_for_timeout(50) or frames, 30, "the socket's snapshot")
        layer.stop()
        wait_until(lambda: page.wait_for_timeout(50) or closed, 30, "the server closing it")
        start_workers("--concurrency", "2", options=LIVE_PROGRESS_OPTIONS)

        _assert_finished_live(page, steps, moves=3)
        assert len(sockets) == len(closed) == 1 and polls  # no second socket: it polled
        log = server.log()
        assert "Traceback" not in log, log
        assert log.count("The channel layer: live progress of") == 1, log
    finally:
        server.stop()
        layer.stop()


def test_bar_reconnects_after_the_server_restarts(open_page, daphne, start_workers):
    steps = 40  # 12 s: the bar still has moves to show once daphne is back on a loaded machine
    job_id = stepped.enqueue(steps, 0.3).id
    page = open_page()
    sockets = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.goto(f"{daphne.url}/progress/{job_id}/")
    page.evaluate(RECORD_BAR_VALUES)
    # The job starts once the page watches: a slow page load must not miss it running.
    start_workers("--concurrency", "2", options=LIVE_PROGRESS_OPTIONS)
    page.wait_for_function(
        "Number(document.querySelector('[role=progressbar]').getAttribute('aria-valuenow')) >= 15",
        timeout=30_000,
    )

    daphne.stop()
    page.wait_for_timeout(500)
    daphne.start()

    _assert_finished_live(page, steps)
    assert len(sockets) >= 2, "the client never reconnected"


def test_bar_moves_to_100_percent_over_websocket_through_pgbouncer(
    pgbouncer, open_page, start_workers, tmp_path
):
    """Daphne and the workers reach PostgreSQL through PgBouncer in transaction pooling mode
    (docs/pgbouncer.md): the bar still follows the job live over its websocket."""
    _, through = pgbouncer
    server = Daphne(
        tmp_path / "daphne-pgbouncer.log",
        database_url=through,
        settings="tests.support.settings.pgbouncer",
    ).start()
    try:
        steps = 10
        job_id = stepped.enqueue(steps, 0.3).id
        page = open_page()
        sockets = []
        page.on("websocket", lambda socket: sockets.append(socket.url))
        page.goto(f"{server.url}/progress/{job_id}/")
        page.evaluate(RECORD_BAR_VALUES)
        # The job starts once the page watches: a slow page load must not miss it running.
        start_workers(
            "--concurrency",
            "2",
            options=LIVE_PROGRESS_OPTIONS,
            database_url=through,
            env=THROUGH_PGBOUNCER,
        )
        _assert_finished_live(page, steps, moves=3)
        assert len(sockets) == 1
    finally:
        server.stop()


def test_with_debug_on_a_bar_whose_script_is_not_served_says_so_on_the_page(open_page, tmp_path):
    """The docs' asgi.py run by daphne directly serves no static files: the bar cannot move."""
    job_id = stepped.enqueue(3, 0.1).id
    server = Daphne(
        tmp_path / "daphne-bare.log",
        application="tests.support.asgi_without_static:application",
        env={"LEASEQUEUE_TEST_DEBUG": "1"},
        ready_path="/admin/login/",
    ).start()
    try:
        page = open_page()
        errors = []
        page.on("console", lambda message: errors.append(message.text))
        page.goto(f"{server.url}/progress/{job_id}/")
        notice = page.locator(f"{BAR} .leasequeue-progress__script-error")
        notice.wait_for(state="visible", timeout=10_000)
        assert "/static/leasequeue/progress.js did not load" in notice.inner_text()
        assert page.get_by_role("alert").count() == 1
        assert any("progress.js did not load" in text for text in errors), errors
    finally:
        server.stop()


def test_with_debug_on_the_notice_stays_hidden_when_the_script_loads(open_page, tmp_path):
    job_id = stepped.enqueue(3, 0.1).id
    server = Daphne(tmp_path / "daphne-debug.log", env={"LEASEQUEUE_TEST_DEBUG": "1"}).start()
    try:
        page = open_page()
        page.goto(f"{server.url}/progress/{job_id}/")
        page.wait_for_function("window.leasequeueProgress !== undefined", timeout=10_000)
        notice = page.locator(f"{BAR} .leasequeue-progress__script-error")
        assert notice.count() == 1 and not notice.is_visible()
    finally:
        server.stop()
